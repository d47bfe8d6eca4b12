"""Shared by the eval tests: Harbor task folders written in a test, scripted routes, and the
real `workbench eval` command run as a subprocess against the scripted LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from headless_harness import bash, cli_env, finish


def make_task(
    root: Path,
    name: str,
    test_sh: str,
    toml: str = "",
    files: Mapping[str, str] | None = None,
    instruction: str = "",
) -> Path:
    """A Harbor task folder `root/name`; its instruction holds `TASK <name>` for routing."""
    folder = root / name
    (folder / "tests").mkdir(parents=True)
    (folder / "instruction.md").write_text(f"{instruction or 'Do the work.'} (TASK {name})\n")
    (folder / "task.toml").write_text(toml)
    (folder / "tests" / "test.sh").write_text("#!/bin/bash\n" + test_sh)
    for relative, text in (files or {}).items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def route(name: str, *commands: str, **first: Any) -> dict[str, Any]:
    """A scripted route for task `name`: each command through execute_bash, then finish.
    `first` adds a step before them (e.g. error=429)."""
    steps: list[dict[str, Any]] = [first] if first else []
    steps += [bash(command) for command in commands] + [finish()]
    return {"match": f"(TASK {name})", "steps": steps}


def eval_env(tmp_path: Path, base_url: str, **extra: str) -> dict[str, str]:
    """The environment of a `workbench eval` run isolated in `tmp_path` (temp files too)."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LLM_", "WORKBENCH_"))}
    env |= cli_env(tmp_path, base_url, TMPDIR=str(tmp_path / "tmp"), **extra)
    return env


def start_eval(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.Popen[str]:
    """`workbench eval ARGS --json` started, its JSON lines on stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", "eval", *args, "--json"],
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_eval_cli(
    args: list[str], env: Mapping[str, str], cwd: Path, timeout: float = 240
) -> tuple[int, list[dict[str, Any]], str]:
    """Run `workbench eval ARGS --json` to its end: (exit code, JSON lines, stderr)."""
    proc = start_eval(args, env, cwd)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, [json.loads(line) for line in out.splitlines()], err


def trial_records(out: Path) -> dict[str, dict[str, Any]]:
    """trial id -> trial.json of every finished trial in `out`."""
    return {
        p.parent.name: json.loads(p.read_text())
        for p in (out / "trials").glob("*/trial.json")
        if not p.parent.name.startswith(".")
    }


def trial_processes(marker: str) -> list[int]:
    """Pids of trial processes whose command line holds `marker` (a test's temp folder)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "workbench.eval.trial_proc" in cmdline and marker in cmdline:
            pids.append(int(entry.name))
    return pids
