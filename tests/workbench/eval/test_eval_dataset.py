"""Acceptance 2 of issue 25: a Harbor-layout dataset written here (shell work, Python work, a
Docker task on the offline base image, a verifier that fails, an agent that times out, a task
whose image cannot be built offline) runs through the real `workbench eval --concurrency 4`
with the scripted model; SIGKILLed after its first finished trial and started again with the
same --out, it runs only what was unfinished, and the trials end as they should."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, sandbox_image  # noqa: F401  (a fixture)
from eval_support import (
    eval_env,
    make_task,
    route,
    run_eval_cli,
    start_eval,
    trial_processes,
    trial_records,
)
from waiting import wait_until

from workbench.eval import eval_exit
from workbench.eval.atif_schema import validate_file
from workbench.testing.llm_server import ScriptedLLMServer

REWARD = "/logs/verifier/reward.txt"
FAST = "[verifier]\ntimeout_sec = 60.0\n"
SCORE = f"echo 1 > {REWARD} || echo 0 > {REWARD}"


def write_dataset(root: Path) -> None:
    """Six tasks, each with what the scripted agent does in `SCRIPT`."""
    make_task(root, "shell-sum", f'[ "$(cat sum.txt)" = 5 ] && {SCORE}\n', FAST)
    make_task(
        root,
        "python-sort",
        "python3 /tests/check.py\n",
        FAST,
        files={
            "tests/check.py": "import json\n"
            "ok = json.load(open('sorted.json')) == [1, 2, 3]\n"
            "json.dump({'reward': float(ok), 'sorted': float(ok)}, "
            "open('/logs/verifier/reward.json', 'w'))\n"
        },
    )
    make_task(
        root,
        "docker-debian",
        # In the container: the agent read the image's Debian version.
        f"test -f /.dockerenv && cmp -s version.txt /etc/debian_version && echo 1 > {REWARD} "
        f"|| echo 0 > {REWARD}\n",
        f'{FAST}[environment]\ndocker_image = "{BASE_IMAGE}"\nmemory = "1G"\n',
    )
    make_task(root, "verifier-fails", f"echo 'the check failed'; echo 0 > {REWARD}; exit 1\n", FAST)
    slow = f"[agent]\ntimeout_sec = 3.0\n{FAST}"
    make_task(root, "agent-times-out", f"test -f done.txt && {SCORE}\n", slow)
    make_task(
        root,
        "image-offline",
        f"echo 1 > {REWARD}\n",
        FAST,
        files={
            "environment/Dockerfile": f'FROM {BASE_IMAGE}\nRUN python3 -c "import urllib.request; '
            "urllib.request.urlopen('http://example.com', timeout=5)\"\n"
        },
    )


SORT = "import json; json.dump(sorted([3, 1, 2]), open('sorted.json', 'w'))"
SCRIPT: dict[str, Any] = {
    "routes": [
        route("shell-sum", "echo $((2 + 3)) > sum.txt"),
        route("python-sort", f'python3 -c "{SORT}"'),
        route("docker-debian", "cat /etc/debian_version > version.txt"),
        route("verifier-fails", "echo hi"),
        route("agent-times-out", "sleep 600; touch done.txt"),
        route("image-offline", "echo never"),
    ]
}
ALL = {f"{route['match'][6:-1]}__1" for route in SCRIPT["routes"]}


@pytest.mark.docker
def test_dataset_runs_resumes_after_sigkill_and_scores(
    sandbox_image: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    write_dataset(tmp_path / "dataset")
    out = tmp_path / "out"
    args = [str(tmp_path / "dataset"), "--concurrency", "4", "--out", str(out)]
    with ScriptedLLMServer(SCRIPT) as server:
        env = eval_env(tmp_path, server.base_url)
        first = start_eval(args, env, tmp_path)
        assert first.stdout is not None
        for line in first.stdout:  # killed as soon as one trial is written
            if json.loads(line)["type"] == "trial":
                break
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=30)
        kept = {t: (out / "trials" / t / "trial.json").read_bytes() for t in trial_records(out)}
        assert 1 <= len(kept) < len(ALL), kept
        # The killed driver's trials see their lifeline close and stop, closing their sandboxes.
        wait_until(lambda: not trial_processes(str(tmp_path)), 60, "orphaned trials to stop")

        code, lines, err = run_eval_cli(args, env, tmp_path, timeout=400)
        resumed = {t: (out / "trials" / t / "trial.json").read_bytes() for t in kept}
        # Once more with --retry-errors: only the errored trial runs again (and fails again).
        again, retried, _ = run_eval_cli([*args, "--retry-errors"], env, tmp_path)
    assert again == eval_exit.TRIAL_ERRORS
    assert [line["trial_id"] for line in retried if line["type"] == "trial"] == ["image-offline__1"]
    assert lines[0]["type"] == "start" and lines[0]["skipped"] == len(kept), lines[0]
    ran = {line["trial_id"] for line in lines if line["type"] == "trial"}
    assert ran == ALL - set(kept), (ran, kept)
    assert resumed == kept  # finished trials were left as they were
    assert code == eval_exit.TRIAL_ERRORS, err  # the image that cannot be built offline
    records = trial_records(out)
    assert set(records) == ALL
    outcome = {tid: (r["status"], r["reward"]) for tid, r in records.items()}
    assert outcome == {
        "shell-sum__1": ("done", 1.0),
        "python-sort__1": ("done", 1.0),
        "docker-debian__1": ("done", 1.0),
        "verifier-fails__1": ("done", 0.0),
        "agent-times-out__1": ("done", 0.0),
        "image-offline__1": ("error", None),
    }, {tid: (r["status"], r["reward"], r["error"]) for tid, r in records.items()}
    assert records["python-sort__1"]["rewards"] == {"reward": 1.0, "sorted": 1.0}
    assert records["agent-times-out__1"]["timed_out"] == {"agent": True, "verifier": False}
    assert not records["shell-sum__1"]["timed_out"]["agent"]
    assert "building the task image" in records["image-offline__1"]["error"]
    trial = out / "trials" / "verifier-fails__1"
    assert "the check failed" in (trial / "verifier" / "stdout.txt").read_text()
    for tid in ALL - {"image-offline__1"}:  # each trial is an ordinary session too
        folder = out / "trials" / tid
        header = json.loads((folder / "session.jsonl").read_text().splitlines()[0])
        assert header["session_id"] == records[tid]["session_id"]
        assert (folder / "agent.txt").read_text().startswith("workbench session")
        assert (folder / "verifier" / "stdout.txt").is_file()
        assert validate_file(folder / "trajectory.json") == [], tid  # ATIF v1.8, checked
        assert "trajectory_note" not in records[tid]
    assert not [p for p in (out / "trials").iterdir() if p.name.startswith(".")]
    assert json.loads((out / "run.json").read_text())["concurrency"] == 4
    assert not os.listdir(tmp_path / "tmp") or all(
        not name.startswith("wb-trial-") for name in os.listdir(tmp_path / "tmp")
    )
