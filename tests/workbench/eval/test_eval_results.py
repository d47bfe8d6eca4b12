"""results.json, the report table and the HTML report, from OUT folders laid out as the
evaluation contract says (trial folders written as the driver writes them)."""

from __future__ import annotations

import argparse
import json
import math
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from eval_fixtures import write_trial

from workbench.eval.report import (
    add_report_parser,
    main_report,
    print_report,
    render_table,
    report_command,
)
from workbench.eval.report_html import render_html
from workbench.eval.results import pass_at_k, scan, write_results

EVIL = "<script>alert(1)</script>\x1b]52;c;aGk=\x07\x9b2J"


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """A run: alpha 3 scored tries (2 pass), beta one pass and one infrastructure error,
    gamma a verifier timeout, an agent-named task, one running, one unreadable, one queued."""
    out = tmp_path / "out"
    for attempt, reward in enumerate((1.0, 0.0, 1.0), start=1):
        write_trial(out, "alpha", attempt, reward=reward, cost=0.02, tokens=(1000, 100))
    write_trial(out, "beta", 1, reward=1.0, seconds={"agent": 10.0, "total": 12.0})
    write_trial(out, "beta", 2, status="error", error="sandbox failed to start", cost=0.0)
    write_trial(out, "gamma", 1, reward=0.0, timed_out={"agent": False, "verifier": True})
    write_trial(out, EVIL.replace("/", "_"), 1, reward=1.0, status="done")
    write_trial(out, "delta", 1, status="error", error=EVIL)
    write_trial(out, "alpha", 4, finished=False)
    broken = out / "trials" / "omega__1"
    broken.mkdir()
    (broken / "trial.json").write_text("{not json")
    (out / "run.json").write_text(json.dumps({"trials": ["alpha__4", "alpha__5", "beta__3"]}))
    partial = out / "trials" / ".beta__3.partial-999"  # the driver writing beta__3's folder
    partial.mkdir()
    (partial / "session.jsonl").write_text("")
    (out / "trials" / ".gamma__2.running").touch()  # a trial the driver started
    return out


def test_pass_at_k_is_the_unbiased_estimator() -> None:
    assert pass_at_k(3, 2, 1) == pytest.approx(2 / 3)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - math.comb(3, 2) / math.comb(5, 2))
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    with pytest.raises(ValueError, match=r"k must be in 1\.\.3"):
        pass_at_k(3, 1, 4)


def test_results_per_task_and_totals(out: Path) -> None:
    results = write_results(out)
    assert json.loads((out / "results.json").read_text()) == results
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []  # no temp left
    alpha = results["tasks"]["alpha"]
    assert (alpha["attempts"], alpha["scored"], alpha["successes"]) == (3, 3, 2)
    assert alpha["reward"] == pytest.approx(2 / 3)
    assert alpha["pass_at_k"] == {"1": pytest.approx(2 / 3), "2": 1.0, "3": 1.0}
    assert alpha["unfinished"] == 2  # alpha__4 running, alpha__5 queued
    assert alpha["tokens"] == {"prompt": 3000, "completion": 300}
    assert alpha["cost_usd"] == pytest.approx(0.06)
    beta = results["tasks"]["beta"]
    # the infrastructure error is an error, not a zero
    assert (beta["reward"], beta["errors"], beta["scored"]) == (1.0, 1, 1)
    assert beta["error_messages"] == {"beta__2": "sandbox failed to start"}
    assert beta["seconds_mean"]["agent"] == pytest.approx(7.5)
    assert results["tasks"]["gamma"]["timeouts"] == {"agent": 0, "verifier": 1}
    assert results["tasks"]["delta"]["reward"] is None
    totals = results["totals"]
    assert (totals["finished"], totals["unfinished"], totals["errors"]) == (8, 4, 2)
    assert (totals["scored"], totals["successes"]) == (6, 4)
    assert totals["timeouts"] == {"agent": 0, "verifier": 1}
    assert [u["trial_id"] for u in results["unreadable"]] == ["omega__1"]
    assert "not readable JSON" in results["unreadable"][0]["why"]


def test_scan_tells_queued_running_and_finished_apart(out: Path) -> None:
    trials, _ = scan(out)
    states = {t.trial_id: t.state for t in trials}
    assert states["alpha__4"] == "running" and states["alpha__5"] == "queued"
    assert states["beta__3"] == "running" and states["gamma__2"] == "running"
    assert states["beta__2"] == "error" and states["alpha__1"] == "done"
    assert not any(trial_id.startswith(".") for trial_id in states)


def test_planned_trials_from_the_tasks_and_attempts_of_run_json(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_trial(out, "alpha", 1)
    (out / "run.json").write_text(json.dumps({"tasks": ["alpha", "beta"], "attempts": 2}))
    states = {t.trial_id: t.state for t in scan(out)[0]}
    assert states == {
        "alpha__1": "done",
        "alpha__2": "queued",
        "beta__1": "queued",
        "beta__2": "queued",
    }


def test_the_table_escapes_agent_written_text(out: Path) -> None:
    table = render_table(write_results(out))
    lines = table.splitlines()
    assert lines[0].split() == [
        "task",
        "tries",
        "reward",
        "pass@1",
        "pass@n",
        "err",
        "t/o",
        "tokens",
        "cost",
        "agent",
    ]
    alpha = next(line for line in lines if line.startswith("alpha"))
    assert alpha.split()[:5] == ["alpha", "3+2", "0.67", "0.67", "1.00"]
    assert any(line.startswith("all 5 tasks") for line in lines)
    assert "error beta__2: sandbox failed to start" in table
    assert "\x1b" not in table and "\x07" not in table and "\x9b" not in table
    assert "unreadable omega__1" in table


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href")]


def test_the_html_report_is_self_contained_and_escaped(out: Path) -> None:
    page = render_html(write_results(out), title=EVIL)
    parser = _Parser()
    parser.feed(page)
    assert "script" not in parser.tags and parser.links == []
    assert "&lt;script&gt;" in page and "\x1b" not in page and "\x9b" not in page
    assert "<script" not in page and "url(" not in page and "@import" not in page
    assert parser.tags.count("svg") == 2
    for svg in page.split("<svg")[1:]:
        ET.fromstring("<svg" + svg.split("</svg>")[0] + "</svg>")  # well-formed: escaped
    assert page.count("<circle") == 4  # alpha, beta, gamma, the evil one; delta has no score
    assert "sandbox failed to start" in page


def test_report_command(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="workbench eval")
    add_report_parser(parser.add_subparsers())
    html_file = tmp_path / "report.html"
    args = parser.parse_args(["report", str(out), "--html", str(html_file)])
    assert args.handler(args) == 0
    printed = capsys.readouterr()
    assert printed.out.startswith("task") and "HTML report" in printed.err
    assert html_file.read_text().startswith("<!DOCTYPE html>")
    assert report_command([str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["totals"]["errors"] == 2
    not_a_run = parser.parse_args(["report", str(tmp_path / "nothing")])
    assert main_report(not_a_run) == 2
    assert "is not an eval run" in capsys.readouterr().err


def test_a_cached_scan_sees_a_trial_run_again(out: Path) -> None:
    cache: dict = {}  # type: ignore[type-arg]
    first = {t.trial_id: t.state for t in scan(out, cache)[0]}
    assert first["beta__2"] == "error" and cache
    write_trial(out, "beta", 2, reward=1.0)  # --retry-errors ran it again
    again = {t.trial_id: (t.state, t.reward) for t in scan(out, cache)[0]}
    assert again["beta__2"] == ("done", 1.0)
    assert again["alpha__1"] == ("done", 1.0)


def test_the_table_at_the_end_of_a_run(out: Path) -> None:
    import io

    stream = io.StringIO()
    results = print_report(out, stream)
    assert json.loads((out / "results.json").read_text()) == results
    assert (
        stream.getvalue().startswith("task ") and "success 4/6 scored trials" in stream.getvalue()
    )
