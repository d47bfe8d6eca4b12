"""TUI benchmark: start-up, key latency, memory, streaming and a 10 000-event session.

Prints progress lines, then ONE JSON object on its last line:
- `first_paint_median_s` vs `baseline_textual_first_paint_median_s`, and their
  `first_paint_ratio` (target <= 2.5): process start to the first frame on a real terminal (a
  pty), of the app (its real config and backend, the project's bytecode compiled beforehand
  as an installed copy has it) and of a bare Textual app (one Static); 7 runs of each,
  interleaved (the machine's load drifts: each pair sees the same), medians; printed as
  `first paint: X s vs bare Textual Y s = Z x (target <= 2.5x)`. `--first-paint` runs only this.
- `first_paint_s`: the app's first paint in the run that goes on to the figures below.
- `key_latency_ms_p95_startup`: a key every 50 ms for the first 10 s, while litellm is imported
  and the local sandbox starts (the key's handler types into the input box).
- `idle_rss_mb`: the whole process tree (app, sandbox server, its shell) after 10 s idle with
  litellm loaded; `idle_rss_mb_by_process` splits it by process; `idle_pss_mb` is the same tree
  with the pages its processes share (the interpreter, shared libraries) counted once.
- `stream_lines_per_s`, `key_latency_ms_p95_while_streaming`: 100 000 lines into the shell pane.
- `load_10k_events_s`, `rss_mb_10k_events`, `key_latency_ms_p95_10k_events`: a saved session
  of 10 000 events opened, then keys that move the cursor and redraw the visible rows.

Baselines, measured in the same run on the same terminal size:
- `baseline_textual_first_paint_s`, `baseline_textual_rss_mb`: a bare Textual app (one Static)
  started the same way in a pty.
- `baseline_litellm_rss_mb`: a bare Python process after `import litellm` (what "litellm
  loaded" costs on its own), and `baseline_python_rss_mb`: the bare interpreter.

Derived, with its target (the final line's `targets` and `targets_met`):
- `idle_rss_floor_mb` = `baseline_litellm_rss_mb` + `baseline_textual_rss_mb` -
  `baseline_python_rss_mb`: litellm and Textual loaded in one interpreter, before any of our
  code or the sandbox server; `idle_rss_above_floor_mb` = `idle_rss_mb` - that floor, the
  memory that is ours (app code, sandbox server, its shell); target <= 45 MB.

Latency is measured as a person's key travels: from a thread (Textual reads keys in one) into
the app's event loop, through the handler, back; waiting on the GIL counts.
Run: `.venv/bin/python benchmarks/tui.py [--first-paint]`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
IDLE_RSS_ABOVE_FLOOR_TARGET_MB = 45
FIRST_PAINT_RATIO_TARGET = 2.5
"""The app's first paint over a bare Textual app's, both medians of the same run."""
FIRST_PAINT_RUNS = 7


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else float("nan")


def tree_rss_mb(pid: int) -> float:
    """Resident memory of a process and all its descendants."""
    return sum(tree_rss_parts_mb(pid).values())


def tree_rss_parts_mb(pid: int) -> dict[str, float]:
    """Resident memory (MB) of a process and each descendant, by pid and program name."""
    import psutil

    root = psutil.Process(pid)
    parts: dict[str, float] = {}
    for proc in [root, *root.children(recursive=True)]:
        try:
            parts[f"{proc.pid} {_program(proc.cmdline())}"] = proc.memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            continue
    return parts


def tree_pss_mb(pid: int) -> float:
    """Proportional memory of a process and its descendants: shared pages counted once."""
    import psutil

    root = psutil.Process(pid)
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_full_info().pss / 2**20
        except psutil.NoSuchProcess:
            continue
    return total


def _program(argv: list[str]) -> str:
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1]
    return Path(argv[0]).name if argv else "?"


class KeyProbe(threading.Thread):
    """Every `interval` s, run `handler` in the app's loop from this thread; keep the latency."""

    def __init__(self, app: Any, handler: Callable[[], object], interval: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.app, self.handler, self.interval = app, handler, interval
        self.latencies: list[float] = []
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.interval):
            started = time.perf_counter()
            try:
                self.app.call_from_thread(self.handler)
            except Exception:
                return
            self.latencies.append((time.perf_counter() - started) * 1000)


# --------------------------------------------------------------------------- start-up (child)


def child_startup(out: Path, started: float, code: Path, paint_only: bool = False) -> None:
    """Run in a pty: the real app (imported from the compiled copy `code`), real backend;
    write the start-up figures to `out` (with `paint_only`, the first paint alone, then quit)."""
    sys.path.insert(0, str(code))
    from workbench.config.load import load_config
    from workbench.tui.app import WorkbenchApp, create_app
    from workbench.tui.bridge import ControllerBackend
    from workbench.tui.widgets.prompt import PromptInput

    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    (tmp / "ws").mkdir()
    env = {
        "WORKBENCH_DATA_DIR": str(tmp / "data"),
        "WORKBENCH_CONFIG_DIR": str(tmp / "cfg"),
        "LLM_MODEL": "openai/bench",
        "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
    }
    config = load_config(env=env, overrides={"sandbox.workspace": str(tmp / "ws")})
    backend = ControllerBackend(config)
    app: WorkbenchApp = create_app(
        config, backend, image_mode="halfcell", user_themes=tmp / "themes"
    )
    result: dict[str, Any] = {}

    def type_key() -> None:
        app.query_one(PromptInput).insert("x")

    async def measure() -> None:
        probe = KeyProbe(app, type_key)
        probe.start()
        await asyncio.sleep(10)
        probe.halt.set()
        result["key_latency_ms_p95_startup"] = round(p95(probe.latencies), 1)
        result["keys_startup"] = len(probe.latencies)
        status = app.query_one("#status").data  # type: ignore[attr-defined]
        for _ in range(600):
            if status.llm != "loading…" and status.sandbox not in ("stopped", "starting…"):
                break
            await asyncio.sleep(0.1)
        result["llm_state"], result["sandbox_state"] = status.llm, status.sandbox
        await asyncio.sleep(10)
        parts = tree_rss_parts_mb(os.getpid())
        result["idle_rss_mb"] = round(sum(parts.values()), 1)
        result["idle_rss_mb_by_process"] = {name: round(mb, 1) for name, mb in parts.items()}
        result["idle_pss_mb"] = round(tree_pss_mb(os.getpid()), 1)
        result["litellm_loaded"] = "litellm" in sys.modules
        result["compiled_copy"] = Path(str(sys.modules["workbench"].__file__)).is_relative_to(code)
        await app.action_quit()

    async def leave() -> None:
        result["litellm_loaded_at_paint"] = "litellm" in sys.modules
        await app.action_quit()

    def painted() -> None:
        result["first_paint_s"] = round(time.time() - started, 3)
        app.run_worker(leave() if paint_only else measure())

    app.call_after_refresh(painted)
    app.run()
    out.write_text(json.dumps(result))


def child_bare_textual(out: Path, started: float, paint_only: bool = False) -> None:
    """Run in a pty: a bare Textual app; write its first paint and its memory to `out` (with
    `paint_only`, the first paint alone)."""
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    result: dict[str, float] = {}

    class Bare(App[None]):
        def compose(self) -> ComposeResult:
            yield Static("hello")

        def on_mount(self) -> None:
            self.call_after_refresh(self.painted)

        def painted(self) -> None:
            result["baseline_textual_first_paint_s"] = round(time.time() - started, 3)
            if paint_only:
                self.exit()
            else:
                self.set_timer(2, self.measure)

        def measure(self) -> None:
            result["baseline_textual_rss_mb"] = round(tree_rss_mb(os.getpid()), 1)
            self.exit()

    Bare().run()
    out.write_text(json.dumps(result))


def _spawn_in_pty(args: list[str], out: Path) -> dict[str, Any]:
    """Run this script with `args` in a 120x40 pty as a person's terminal would; read `out`."""
    import pexpect

    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    child = pexpect.spawn(
        sys.executable,
        [__file__, *args],
        env=env,
        dimensions=(40, 120),
        encoding="utf-8",
        codec_errors="replace",
    )
    child.expect(pexpect.EOF, timeout=180)
    child.close()
    if not out.exists():
        raise RuntimeError(f"the pty child {args[0]} failed: {child.before[-2000:]}")
    data: dict[str, Any] = json.loads(out.read_text())
    return data


def bench_baselines() -> dict[str, Any]:
    """The floor under our figures: a bare Textual app, a bare interpreter, bare litellm."""
    import subprocess

    out = Path(tempfile.mkdtemp(prefix="tui-bench-")) / "bare.json"
    results = _spawn_in_pty(["--child-bare", str(out), str(time.time())], out)
    rss = (
        "import os; [print(int(line.split()[1]) / 1024) for line in open('/proc/self/status')"
        " if line.startswith('VmRSS')]"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    for key, code in (
        ("baseline_python_rss_mb", rss),
        ("baseline_litellm_rss_mb", "import litellm; " + rss),
    ):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        )
        results[key] = round(float(done.stdout.split()[-1]), 1)
    return results


def rss_above_floor(results: dict[str, Any]) -> dict[str, float]:
    """The idle tree's RSS over the floor of bare litellm plus a bare Textual app; printed."""
    floor = (
        results["baseline_litellm_rss_mb"]
        + results["baseline_textual_rss_mb"]
        - results["baseline_python_rss_mb"]
    )
    above = results["idle_rss_mb"] - floor
    print(
        f"idle_rss_mb {results['idle_rss_mb']} = floor {floor:.1f} (bare litellm "
        f"{results['baseline_litellm_rss_mb']} + bare Textual app "
        f"{results['baseline_textual_rss_mb']} - bare Python {results['baseline_python_rss_mb']})"
        f" + {above:.1f} above it (target <= {IDLE_RSS_ABOVE_FLOOR_TARGET_MB})",
        flush=True,
    )
    return {"idle_rss_floor_mb": round(floor, 1), "idle_rss_above_floor_mb": round(above, 1)}


def installed_copy() -> Path:
    """The project's packages copied to a temporary folder and compiled, as `pip install`
    leaves them.

    Run from a checkout with PYTHONDONTWRITEBYTECODE=1 (as here), every workbench and sandbox
    module would otherwise be compiled from source on each start (40-80 ms before the first
    paint), which no installed copy does. (A PYTHONPYCACHEPREFIX would not do: it also hides
    the bytecode of every installed library.)
    """
    import subprocess

    root = Path(tempfile.mkdtemp(prefix="tui-bench-root-"))
    for name in ("workbench", "sandbox", "themes"):
        shutil.copytree(ROOT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(root / "workbench"), str(root / "sandbox")],
        check=True,
        capture_output=True,
    )
    return root


def bench_first_paint(runs: int = FIRST_PAINT_RUNS) -> dict[str, Any]:
    """First paint of the app and of a bare Textual app, `runs` times each, interleaved (the
    machine's load drifts: each pair sees the same), from one compiled copy; medians and ratio."""
    code = installed_copy()
    ours: list[float] = []
    bare: list[float] = []
    try:
        for run in range(runs):
            folder = Path(tempfile.mkdtemp(prefix="tui-bench-"))
            pair = [("bare", folder / "bare.json"), ("ours", folder / "ours.json")]
            for kind, out in pair if run % 2 == 0 else pair[::-1]:
                if kind == "bare":
                    args = ["--child-bare", str(out), str(time.time()), "paint-only"]
                    got = _spawn_in_pty(args, out)
                    bare.append(got["baseline_textual_first_paint_s"])
                else:
                    args = ["--child-startup", str(out), str(time.time()), str(code), "paint-only"]
                    got = _spawn_in_pty(args, out)
                    ours.append(got["first_paint_s"])
                    if got.get("litellm_loaded_at_paint"):
                        raise RuntimeError("litellm was imported before the first paint")
            shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(code, ignore_errors=True)
    ours_s, bare_s = statistics.median(ours), statistics.median(bare)
    ratio = ours_s / bare_s
    print(
        f"first paint: {ours_s:.3f} s vs bare Textual {bare_s:.3f} s = {ratio:.2f} x "
        f"(target <= {FIRST_PAINT_RATIO_TARGET}x; medians of {runs} interleaved runs)",
        flush=True,
    )
    return {
        "first_paint_median_s": round(ours_s, 3),
        "baseline_textual_first_paint_median_s": round(bare_s, 3),
        "first_paint_ratio": round(ratio, 2),
        "first_paint_runs_s": ours,
        "baseline_textual_first_paint_runs_s": bare,
    }


def bench_startup() -> dict[str, Any]:
    """Start the app in a pty (as a person would) and collect the child's figures."""
    out = Path(tempfile.mkdtemp(prefix="tui-bench-")) / "startup.json"
    code = installed_copy()
    started = time.time()
    try:
        return _spawn_in_pty(["--child-startup", str(out), str(started), str(code)], out)
    finally:
        shutil.rmtree(code, ignore_errors=True)


# --------------------------------------------------------------------------- streaming


async def bench_stream(total: int = 100_000, per_chunk: int = 250) -> dict[str, Any]:
    """Stream `total` lines into the shell pane from a thread, typing meanwhile."""
    from sandbox.protocol import CmdRunAction, OutputChunk
    from workbench.events import ActionEvent
    from workbench.tui.app import create_app
    from workbench.tui.widgets.prompt import PromptInput
    from workbench.tui.widgets.shell import ShellPane

    app = create_app(None, None, image_mode="halfcell", user_themes=Path("/nonexistent"))
    async with app.run_test(size=(160, 48)) as pilot:
        app.feed_event(
            ActionEvent(
                id=1,
                tool_name="execute_bash",
                tool_call_id="c",
                action=CmdRunAction(command="seq 100000"),
            )
        )
        shell = app.query_one(ShellPane)
        before = shell.output.lines_received
        chunks = [
            OutputChunk(
                seq=n,
                command="seq",
                data="".join(f"line {i} of the streamed output\n" for i in range(n, n + per_chunk)),
            )
            for n in range(0, total, per_chunk)
        ]
        probe = KeyProbe(app, lambda: app.query_one(PromptInput).insert("x"))

        def produce() -> None:
            for chunk in chunks:
                app.feed_output(chunk)
                time.sleep(0.0005)

        started = time.perf_counter()
        probe.start()
        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        deadline = time.perf_counter() + 60
        while shell.output.lines_received - before < total:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"only {shell.output.lines_received - before} lines arrived")
            await pilot.pause(0.01)
        elapsed = time.perf_counter() - started
        probe.halt.set()
        await pilot.pause(0.1)
    return {
        "stream_lines_per_s": round(total / elapsed),
        "key_latency_ms_p95_while_streaming": round(p95(probe.latencies), 1),
        "keys_while_streaming": len(probe.latencies),
    }


# --------------------------------------------------------------------------- 10k events


def write_session(path_dir: Path, count: int = 10_000) -> Path:
    """A session log of `count` events: messages, commands and their (multi-line) output."""
    from sandbox.protocol import CmdOutputObservation, CmdRunAction
    from workbench.events import ActionEvent, MessageEvent, ObservationEvent
    from workbench.session.log import SessionLog, make_header

    log = SessionLog.create(path_dir, make_header("bench-10k", "/ws", "openai/bench"))
    n = 0
    while n < count:
        n += 1
        log.append(MessageEvent(id=n, source="agent", text=f"Step {n}: let me check **this**."))
        n += 1
        log.append(
            ActionEvent(
                id=n,
                tool_name="execute_bash",
                tool_call_id=f"c{n}",
                action=CmdRunAction(command=f"ls -la /tmp/dir{n} | head -20"),
            )
        )
        n += 1
        body = "\n".join(f"-rw-r--r-- 1 root root {i * 37} file{i}.txt" for i in range(20))
        log.append(
            ObservationEvent(
                id=n,
                cause=n - 1,
                tool_call_id=f"c{n - 1}",
                observation=CmdOutputObservation(command="ls", content=body, exit_code=0),
            )
        )
    log.close()
    return log.path


async def bench_10k(path: Path) -> dict[str, Any]:
    """Open the saved session; move through it with keys."""
    from workbench.tui.app import create_app
    from workbench.tui.widgets.conversation import ConversationView

    app = create_app(None, None, image_mode="halfcell", user_themes=Path("/nonexistent"))
    async with app.run_test(size=(160, 48)) as pilot:
        started = time.perf_counter()
        app.open_session_file(path)
        await pilot.pause()
        view = app.query_one(ConversationView)
        for y in range(view.size.height):
            view.render_line(y)
        loaded = time.perf_counter() - started
        rss = tree_rss_mb(os.getpid())
        view.focus()
        view.action_cursor_to(0)
        moves = ["cursor(1)", "toggle_cell", "cursor(1)", "page(1)", "cursor(-1)", "toggle_cell"]
        step = [0]

        def press() -> None:
            action = moves[step[0] % len(moves)]
            step[0] += 1
            name, _, arg = action.partition("(")
            method = getattr(view, f"action_{name}")
            method(int(arg.rstrip(")"))) if arg else method()
            for y in range(view.size.height):
                view.render_line(y)

        probe = KeyProbe(app, press, interval=0.02)
        probe.start()
        await pilot.pause(4)
        probe.halt.set()
        await pilot.pause(0.1)
        events = len(view.cells)
    return {
        "load_10k_events_s": round(loaded, 3),
        "rss_mb_10k_events": round(rss, 1),
        "key_latency_ms_p95_10k_events": round(p95(probe.latencies), 1),
        "cells_10k": events,
        "keys_10k": len(probe.latencies),
    }


def run_child(kind: str, arg: str) -> None:
    """Run one in-process part in this (fresh) process and print its JSON."""
    if kind == "--child-stream":
        print(json.dumps(asyncio.run(bench_stream())))
    elif kind == "--child-10k":
        print(json.dumps(asyncio.run(bench_10k(Path(arg)))))


def in_child(kind: str, arg: str = "") -> dict[str, Any]:
    """Each part in a fresh process, so memory figures do not mix."""
    import subprocess

    done = subprocess.run(
        [sys.executable, __file__, kind, arg],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{kind} failed: {done.stderr[-2000:]}")
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def main() -> None:
    """Run every part and print the summary line."""
    results: dict[str, Any] = {}
    print(f"first paint, {FIRST_PAINT_RUNS} runs of each, interleaved ...", flush=True)
    results |= bench_first_paint()
    if "--first-paint" in sys.argv:
        print(json.dumps(results))
        return
    print("start-up in a pty (about 25 s) ...", flush=True)
    results |= bench_startup()
    print("baselines: a bare Textual app, bare Python, bare litellm ...", flush=True)
    results |= bench_baselines()
    results |= rss_above_floor(results)
    print("streaming 100 000 lines ...", flush=True)
    results |= in_child("--child-stream")
    print("opening a 10 000-event session ...", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_session(Path(tmp))
        results |= in_child("--child-10k", str(path))
    above = results["idle_rss_above_floor_mb"]
    met = above <= IDLE_RSS_ABOVE_FLOOR_TARGET_MB
    target = f"<= {IDLE_RSS_ABOVE_FLOOR_TARGET_MB}"
    print(f"target idle_rss_above_floor_mb {target}: {above}, {'met' if met else 'NOT MET'}")
    ratio = results["first_paint_ratio"]
    paint_met = ratio <= FIRST_PAINT_RATIO_TARGET
    print(
        f"target first_paint_ratio <= {FIRST_PAINT_RATIO_TARGET}: {ratio}, "
        f"{'met' if paint_met else 'NOT MET'}"
    )
    results["targets"] = {
        "idle_rss_above_floor_mb": target,
        "first_paint_ratio": f"<= {FIRST_PAINT_RATIO_TARGET}",
    }
    results["targets_met"] = {"idle_rss_above_floor_mb": met, "first_paint_ratio": paint_met}
    print(json.dumps(results))


if __name__ == "__main__":
    paint_only = sys.argv[-1] == "paint-only"
    if len(sys.argv) > 1 and sys.argv[1] == "--child-startup":
        child_startup(Path(sys.argv[2]), float(sys.argv[3]), Path(sys.argv[4]), paint_only)
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-bare":
        child_bare_textual(Path(sys.argv[2]), float(sys.argv[3]), paint_only)
    elif len(sys.argv) > 1 and sys.argv[1].startswith("--child-"):
        run_child(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")
    else:
        main()
