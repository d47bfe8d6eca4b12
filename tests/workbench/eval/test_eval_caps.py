"""Acceptance 4 of issue 25: a 429 from the model is retried inside the trial, which then
succeeds (never scored as a failure); a global cost cap stops the run, keeps the finished
trials, and the same --out with a higher cap runs only the rest."""

from __future__ import annotations

import json
from pathlib import Path

from eval_support import eval_env, make_task, route, run_eval_cli, trial_records

from workbench.eval import eval_exit
from workbench.testing.llm_server import ScriptedLLMServer

REWARD = "/logs/verifier/reward.txt"
CHECK = f'[ "$(cat out.txt)" = ok ] && echo 1 > {REWARD} || echo 0 > {REWARD}\n'


def test_a_rate_limited_trial_is_retried_with_backoff_and_succeeds(tmp_path: Path) -> None:
    make_task(tmp_path / "data", "limited", CHECK)
    limited = {"error": 429, "repeat": 2, "headers": {"Retry-After": "0"}}
    script = {"routes": [route("limited", "echo ok > out.txt", **limited)]}
    with ScriptedLLMServer(script) as server:
        code, _, err = run_eval_cli(
            [str(tmp_path / "data"), "--out", str(tmp_path / "out")],
            eval_env(tmp_path, server.base_url),
            tmp_path,
        )
    assert code == eval_exit.DONE, err
    record = trial_records(tmp_path / "out")["limited__1"]
    assert (record["status"], record["reward"], record["error"]) == ("done", 1.0, None)
    events = [
        json.loads(line)
        for line in (tmp_path / "out" / "trials" / "limited__1" / "session.jsonl").open()
    ]
    retries = [e for e in events[1:] if e["kind"] == "llm_retry"]
    assert [(e["retry"], e["error_kind"]) for e in retries] == [
        (1, "rate_limit"),
        (2, "rate_limit"),
    ]
    assert len(server.requests) == 4  # two refused, then the command and finish


def test_a_global_cost_cap_stops_the_run_and_keeps_what_finished(tmp_path: Path) -> None:
    for name in ("a-first", "b-second", "c-third"):
        make_task(tmp_path / "data", name, CHECK)
    # gpt-4o's price: 100 000 prompt tokens cost $0.25 a call, so a trial (2 calls) $0.50.
    usage = {"usage": {"prompt_tokens": 100_000, "completion_tokens": 0}}
    script = {
        "routes": [
            {**route(name, "echo ok > out.txt"), "default": None}
            for name in ("a-first", "b-second", "c-third")
        ]
    }
    for item in script["routes"]:
        item["steps"] = [{**step, **usage} for step in item["steps"]]
    args = [str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--max-cost", "0.6"]
    with ScriptedLLMServer(script) as server:
        env = eval_env(tmp_path, server.base_url, LLM_MODEL="openai/gpt-4o")
        code, lines, err = run_eval_cli(args, env, tmp_path)
        assert code == eval_exit.CAPPED, err
        records = trial_records(tmp_path / "out")
        # a: $0.50, within the cap; b started with $0.10 left, its own budget stopped it after
        # one call; then the run was over the cap and c never started.
        assert set(records) == {"a-first__1", "b-second__1"}, lines
        assert (records["a-first__1"]["status"], records["a-first__1"]["reward"]) == ("done", 1.0)
        assert records["a-first__1"]["cost_usd"] == 0.5
        assert records["b-second__1"]["agent_status"] == "budget"
        summary = lines[-1]
        assert summary["type"] == "summary" and summary["unfinished"] == 1
        assert "cost cap" in summary["capped"]
        assert any(line["type"] == "notice" and "cost cap" in line["message"] for line in lines)
        kept = (tmp_path / "out" / "trials" / "a-first__1" / "trial.json").read_bytes()

        args[-1] = "5"
        code, lines, err = run_eval_cli(args, env, tmp_path)
    assert code == eval_exit.DONE, err
    assert [line["trial_id"] for line in lines if line["type"] == "trial"] == ["c-third__1"]
    assert (tmp_path / "out" / "trials" / "a-first__1" / "trial.json").read_bytes() == kept
    assert set(trial_records(tmp_path / "out")) == {"a-first__1", "b-second__1", "c-third__1"}


def test_on_cap_stop_stops_the_running_trials(tmp_path: Path) -> None:
    make_task(tmp_path / "data", "a-spends", CHECK)
    make_task(tmp_path / "data", "b-waits", CHECK)
    usage = {"usage": {"prompt_tokens": 100_000, "completion_tokens": 0}}
    spends = route("a-spends", "echo ok > out.txt")
    spends["steps"] = [{**step, **usage} for step in spends["steps"]]
    script = {"routes": [spends, {"match": "(TASK b-waits)", "steps": [{"hang": True}]}]}
    args = [str(tmp_path / "data"), "--out", str(tmp_path / "out"), "--concurrency", "2"]
    args += ["--max-cost", "0.3", "--on-cap", "stop"]
    with ScriptedLLMServer(script) as server:
        env = eval_env(tmp_path, server.base_url, LLM_MODEL="openai/gpt-4o")
        code, lines, err = run_eval_cli(args, env, tmp_path)
    assert code == eval_exit.CAPPED, err
    assert set(trial_records(tmp_path / "out")) == {"a-spends__1"}  # b was stopped, not kept
    ended = {line["trial_id"]: line["status"] for line in lines if line["type"] == "trial"}
    assert ended == {"a-spends__1": "done", "b-waits__1": "cancelled"}


def test_a_task_cost_cap_ends_that_tasks_attempts(tmp_path: Path) -> None:
    make_task(tmp_path / "data", "pricey", CHECK)
    usage = {"usage": {"prompt_tokens": 100_000, "completion_tokens": 0}}
    pricey = route("pricey", "echo ok > out.txt")
    pricey["steps"] = [{**step, **usage} for step in pricey["steps"]]
    args = [str(tmp_path / "data"), "--out", str(tmp_path / "out"), "-n", "3"]
    args += ["--max-task-cost", "0.6"]
    with ScriptedLLMServer({"routes": [pricey]}) as server:
        env = eval_env(tmp_path, server.base_url, LLM_MODEL="openai/gpt-4o")
        code, lines, err = run_eval_cli(args, env, tmp_path)
    assert code == eval_exit.CAPPED, err
    records = trial_records(tmp_path / "out")
    # Attempt 1 spent $0.50; attempt 2 had $0.10 left and its budget stopped it after a call;
    # attempt 3 never started.
    assert sorted(records) == ["pricey__1", "pricey__2"]
    assert (records["pricey__1"]["reward"], records["pricey__1"]["cost_usd"]) == (1.0, 0.5)
    assert (records["pricey__2"]["agent_status"], records["pricey__2"]["cost_usd"]) == (
        "budget",
        0.25,
    )
    assert lines[-1]["unfinished"] == 1
    notices = [line["message"] for line in lines if line["type"] == "notice"]
    assert notices == ["pricey reached its cost cap $0.6 ($0.7500): its other attempts are not run"]
