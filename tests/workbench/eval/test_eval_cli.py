"""`workbench eval` from the command line: the demo suite solved by a scripted agent that
runs each task's own solution, the plain progress lines off a terminal, and usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from eval_support import eval_env, make_task, route, trial_records

from workbench.eval import eval_exit
from workbench.eval.tasks import DEMO_DIR
from workbench.testing.llm_server import ScriptedLLMServer
from workbench.testing.scripts import parse_script

DEMO = ("count-lines", "hello-file", "json-config", "python-fizzbuzz")
MINIWOB = {  # the demo's MiniWoB tasks (seeded: fixed pages) and a known-good sequence each
    "miniwob.click-test": ['click("13")'],
    "miniwob.click-button@3": ['click("19")'],
    "miniwob.enter-text@5": ['fill("14", "Ashlea")', 'click("15")'],
}


def browse(code: str) -> dict[str, object]:
    """A scripted reply that calls the browser tool with one BrowserGym action."""
    return {"tool_calls": [{"name": "browser", "arguments": {"code": code}}]}


def run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "workbench", "eval", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def test_the_demo_suite_is_solved_by_its_own_solutions(tmp_path: Path) -> None:
    script = {
        "routes": [
            {**route(name, f"bash {DEMO_DIR / name / 'solution' / 'solve.sh'}"), "match": match}
            for name, match in zip(
                DEMO, ("data.txt", "hello.txt", "config.json", "fizzbuzz.py"), strict=True
            )
        ]
        + [
            {"match": f"Web task '{name.split('@')[0]}'", "steps": [browse(c) for c in codes]}
            for name, codes in MINIWOB.items()
        ]
    }
    with ScriptedLLMServer(script) as server:
        env = eval_env(tmp_path, server.base_url)
        done = run(["demo", "--concurrency", "4", "--out", str(tmp_path / "out")], env, tmp_path)
    assert done.returncode == eval_exit.DONE, done.stderr
    records = trial_records(tmp_path / "out")
    every = (*DEMO, *MINIWOB)
    assert {tid: r["reward"] for tid, r in records.items()} == {f"{n}__1": 1.0 for n in every}
    assert records["count-lines__1"]["rewards"] == {"reward": 1.0, "data": 1.0, "answer": 1.0}
    for name in DEMO:  # the trial processes printed nothing on stderr (and ended cleanly)
        assert not (tmp_path / "out" / "trials" / f"{name}__1" / "trial.log").exists()
    # Off a terminal: a line per finished trial, no progress-line rewrites.
    lines = [line for line in done.stderr.splitlines() if "__1: " in line]
    assert sorted(lines) == sorted(f"{n}__1: done, reward 1" for n in every)
    assert "\r" not in done.stderr
    assert done.stderr.endswith(
        "eval: 7 of 7 trials finished, mean reward 1, 0 errors, $0.0000; "
        f"results in {tmp_path / 'out'}\n"
    )


def test_usage_errors_say_what_to_fix(tmp_path: Path) -> None:
    env = eval_env(tmp_path, "http://127.0.0.1:9/v1")
    missing = run([str(tmp_path / "nope")], env, tmp_path)
    assert missing.returncode == eval_exit.USAGE
    assert "no such folder" in missing.stderr
    make_task(tmp_path / "data", "bad", "exit 0\n", '[agent]\ntimeout_sec = "soon"\n')
    bad = run([str(tmp_path / "data")], env, tmp_path)
    assert bad.returncode == eval_exit.USAGE
    assert f"{tmp_path}/data/bad/task.toml: [agent] timeout_sec must be a number" in bad.stderr
    zero = run([str(tmp_path / "data"), "--concurrency", "0"], env, tmp_path)
    assert zero.returncode == eval_exit.USAGE and "at least 1" in zero.stderr
    no_model = run([str(tmp_path / "data")], env | {"LLM_MODEL": ""}, tmp_path)
    assert no_model.returncode == eval_exit.USAGE and "model" in no_model.stderr
    assert not (tmp_path / "eval-runs").exists() and not trial_records(tmp_path / "data")


def test_a_task_without_internet_gets_a_sandbox_without_network(tmp_path: Path) -> None:
    # Reward 1 when the agent's request to the model's server (on this machine) got through.
    reward = "/logs/verifier/reward.txt"
    reached = f'[ "$(cat rc.txt)" = 0 ] && echo 1 > {reward} || echo 0 > {reward}\n'
    make_task(tmp_path / "data", "offline", reached, "[environment]\nallow_internet = false\n")
    make_task(tmp_path / "data", "online", reached, "[environment]\nallow_internet = true\n")
    with ScriptedLLMServer([]) as server:
        fetch = f"import urllib.request as u; u.urlopen('{server.base_url}/models', timeout=5)"
        command = f'python3 -c "{fetch}"; echo $? > rc.txt'
        server.script = parse_script(
            {"routes": [route("offline", command), route("online", command)]}
        )
        # The configured network is "on": only the task's allow_internet = false turns it off.
        env = eval_env(tmp_path, server.base_url, WORKBENCH_SANDBOX_NETWORK="on")
        args = [str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--concurrency", "2"]
        done = run(args, env, tmp_path)
    assert done.returncode == eval_exit.DONE, done.stderr
    rewards = {tid: r["reward"] for tid, r in trial_records(tmp_path / "out").items()}
    assert rewards == {"offline__1": 0.0, "online__1": 1.0}
