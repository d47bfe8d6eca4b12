"""Evaluation: datasets of tasks run as trials in fresh sandboxes, scored by verifiers.

- `types.py`: the shared types (`TrialJob`, `TrialOutcome`, `VerifierResult`, the `TrialPool`
  and `TaskKind` protocols).
- `tasks.py`: task folders in the Harbor / Terminal-Bench 2.0 layout (`task_config.py` reads
  their `task.toml`), datasets, BrowserGym ids, the built-in demo suite under `demo/`.
- `trial.py`: `run_trial(job)`, one trial in a child process (`trial_proc.py`: a fresh
  sandbox, the agent headless, then the verifier in the same sandbox; `verifier.py`,
  `task_image.py` for a task's Docker image).
- `pool.py`: `LocalPool`, trials in threads of this process, each in its own child process.
- `run.py`: the orchestrator (resume, caps, progress in `progress.py`); `eval_cli.py` its
  command line, `workbench eval ...`; `eval_exit.py` its exit codes.
"""
