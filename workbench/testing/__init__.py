"""Test support shipped in the package: the scripted OpenAI-compatible LLM server.

`workbench.testing.llm_server.ScriptedLLMServer` is the only stand-in the test suite uses;
`workbench.testing.scripts` validates its scripts and builds the replies.
"""
