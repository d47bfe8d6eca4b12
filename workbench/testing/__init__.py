"""Test support shipped in the package, starting with stand-ins for the LLM.

`workbench.testing.llm_server.ScriptedLLMServer` is an OpenAI-compatible server reached over
HTTP through litellm; `workbench.testing.fake_llm.FakeLLM` replaces the LLM client in-process
(no litellm, no HTTP) for loop-only tests and benchmarks. `workbench.testing.scripts`
validates the scripts both play and builds the server's replies.
`workbench.testing.fake_backend.FakeBackend` stands in for the TUI's backend: it records what
the app asks of it and runs nothing.
`workbench.testing.shell_trial.shell_trial` stands in for the eval's `run_trial` without an LLM:
a fresh local sandbox runs scripted commands (the trial pools' tests and `benchmarks/eval.py`).

Imports: eval, llm, tui.
"""
