"""Evaluation: datasets of tasks run as trials in fresh sandboxes, scored by verifiers.

- `types.py`: the shared types (`TrialJob`, `TrialOutcome`, `VerifierResult`, the `TrialPool`
  and `TaskKind` protocols).
- `tasks.py`: task folders in the Harbor / Terminal-Bench 2.0 layout (`task_config.py` reads
  their `task.toml`), datasets, BrowserGym ids, the built-in demo suite under `demo/`.
- `trial.py`: `run_trial(job)`, one trial in a child process (`trial_proc.py`: a fresh
  sandbox, the agent headless, then the verifier in the same sandbox; `verifier.py`,
  `task_image.py` for a task's Docker image).
- `pool.py`: `LocalPool`, trials in threads of this process, each in its own child process.
- `run.py`: the orchestrator (resume, caps, progress in `progress.py`); `eval_exit.py` its exit
  codes; the command line is `workbench/cli/eval.py` (and `eval_watch.py` for the TUI's view).
- `ray_pool.py`: `RayPool`, trials as Ray tasks on a cluster (the optional `ray` extra);
  `task_bundle.py` packs a task folder on the driver and unpacks it on the node.
- `browsergym_task.py`: a BrowserGym benchmark task (MiniWoB) as a task kind.
- `atif.py` + `atif_schema.py`: a trial's session log as an ATIF v1.8 `trajectory.json`, and a
  validator written from the spec; `results.py`: `results.json` from the trial folders;
  `report.py`, `report_html.py`, `table.py`: the table and the offline HTML report.

A front end of its own, beside `headless` (each trial runs the agent headless in a child
process); the TUI reads its results (`tui/screens/eval_run.py`) but it never imports the TUI.

Imports: agent, config, headless, llm, session, tools.
"""
