"""The browser executor against a real headless Chromium and pages served on 127.0.0.1."""

from __future__ import annotations

import functools
import os
import re
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import psutil
import pytest
from waiting import wait_until

from sandbox.executors.base import ExecutorContext
from sandbox.executors.browser import BrowserExecutor, browser_unavailable_reason
from sandbox.protocol import BrowseAction, BrowseObservation, ErrorObservation

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        browser_unavailable_reason() is not None and not os.environ.get("CI"),
        reason=str(browser_unavailable_reason()),
    ),
]

PAGE = """<html><head><title>Test page</title></head><body>
<h1>Hello from the test</h1>
<button onclick="document.getElementById('out').textContent='clicked!'">Press me</button>
<p id="out">waiting</p>
<a href="report.txt" download>get report</a>
<a href="data.csv" download>get data</a>
<a href="slow.csv" download>get slow data</a>
</body></html>"""
CSV = "city,population\nLyon,522250\nKöln,1084831\n"


class _Handler(SimpleHTTPRequestHandler):
    """Serves the folder, plus `slow.csv`: its body pauses a second halfway."""

    def do_GET(self) -> None:
        if self.path != "/slow.csv":
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "text/csv")
        self.send_header("Content-Length", "8")
        self.end_headers()
        self.wfile.write(b"a,b\n")
        self.wfile.flush()
        time.sleep(1.0)  # scripted delay: the slow download under test pauses halfway
        self.wfile.write(b"1,2\n")
        return None

    def log_message(self, format: str, *args: object) -> None:
        return None


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("site")
    (root / "index.html").write_text(PAGE)
    (root / "report.txt").write_text("the report\n")
    (root / "data.csv").write_text(CSV, encoding="utf-8")
    handler = functools.partial(_Handler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserExecutor]:
    workspace = tmp_path_factory.mktemp("workspace")
    artifacts = tmp_path_factory.mktemp("artifacts")
    executor = BrowserExecutor(ExecutorContext(workspace=workspace, artifacts=artifacts))
    yield executor
    executor.close()


def browse(browser: BrowserExecutor, action: str) -> BrowseObservation:
    """Run an action; every observation must name its screenshot file, a PNG on disk."""
    observation = browser.execute(BrowseAction(action=action))
    assert isinstance(observation, BrowseObservation), observation
    assert observation.screenshot is not None
    shot = Path(observation.screenshot_path)
    assert shot.is_absolute() and shot.name == observation.screenshot
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    return observation


def bid_of(observation: BrowseObservation, role: str, name: str) -> str:
    match = re.search(rf"\[(\w+)\] {role} '{re.escape(name)}'", observation.axtree)
    assert match, observation.axtree
    return match.group(1)


def test_goto_gives_url_title_text_tree_and_screenshot(browser: BrowserExecutor, site: str) -> None:
    page = browse(browser, f'goto("{site}/index.html")')
    assert page.url == f"{site}/index.html"
    assert page.title == "Test page"
    assert "Hello from the test" in page.content
    assert "button 'Press me'" in page.axtree
    assert page.screenshot is not None
    png = browser._context.artifacts / page.screenshot
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_click_by_bid_changes_the_page(browser: BrowserExecutor, site: str) -> None:
    page = browse(browser, f'goto("{site}/index.html")')
    clicked = browse(browser, f'click("{bid_of(page, "button", "Press me")}")')
    assert "clicked!" in clicked.content
    assert clicked.error is None


def test_unknown_bid_is_reported_not_raised(browser: BrowserExecutor, site: str) -> None:
    browse(browser, f'goto("{site}/index.html")')
    page = browse(browser, 'click("no-such-bid")')
    assert page.error is not None and "no-such-bid" in page.error


def test_malformed_action_gets_a_hint(browser: BrowserExecutor) -> None:
    answer = browser.execute(BrowseAction(action="goto("))
    assert isinstance(answer, ErrorObservation)
    assert "goto(" in answer.content and "click(" in answer.content


def test_download_is_named_by_the_action_that_made_it(browser: BrowserExecutor, site: str) -> None:
    workspace = browser._context.workspace.resolve()
    page = browse(browser, f'goto("{site}/index.html")')
    assert page.downloads == []
    clicked = browse(browser, f'click("{bid_of(page, "link", "get data")}")')
    assert clicked.downloads == [str(workspace / "data.csv")]
    assert Path(clicked.downloads[0]).read_text(encoding="utf-8") == CSV
    assert browse(browser, "scroll(0, 100)").downloads == []


def test_slow_download_is_waited_for_and_named(browser: BrowserExecutor, site: str) -> None:
    workspace = browser._context.workspace.resolve()
    page = browse(browser, f'goto("{site}/index.html")')
    clicked = browse(browser, f'click("{bid_of(page, "link", "get slow data")}")')
    assert clicked.downloads == [str(workspace / "slow.csv")]
    assert (workspace / "slow.csv").read_bytes() == b"a,b\n1,2\n"


def test_download_never_overwrites_a_workspace_file(browser: BrowserExecutor, site: str) -> None:
    workspace = browser._context.workspace.resolve()
    (workspace / "report.txt").write_text("mine, not the site's\n")
    page = browse(browser, f'goto("{site}/index.html")')
    link = bid_of(page, "link", "get report")
    first = browse(browser, f'click("{link}")')
    second = browse(browser, f'click("{link}")')
    assert first.downloads == [str(workspace / "report (1).txt")]
    assert second.downloads == [str(workspace / "report (2).txt")]
    assert (workspace / "report.txt").read_text() == "mine, not the site's\n"
    assert (workspace / "report (2).txt").read_text() == "the report\n"


def test_killed_browser_is_restarted_with_a_note(tmp_path: Path, site: str) -> None:
    executor = BrowserExecutor(ExecutorContext(workspace=tmp_path, artifacts=tmp_path))
    try:
        browse(executor, f'goto("{site}/index.html")')
        assert executor._proc is not None
        worker = psutil.Process(executor._proc.pid)
        family = [worker, *worker.children(recursive=True)]
        os.killpg(worker.pid, signal.SIGKILL)
        executor._proc.wait()
        page = browse(executor, f'goto("{site}/index.html")')
        assert "restarted" in page.content
        assert page.title == "Test page"
    finally:
        executor.close()
    wait_until(
        lambda: not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE],
        what="the browser's processes to end",
    )


def test_close_leaves_no_process(tmp_path: Path, site: str) -> None:
    executor = BrowserExecutor(ExecutorContext(workspace=tmp_path, artifacts=tmp_path))
    browse(executor, f'goto("{site}/index.html")')
    assert executor._proc is not None
    worker = psutil.Process(executor._proc.pid)
    family = [worker, *worker.children(recursive=True)]
    assert len(family) > 1  # the worker and Chromium's processes
    executor.close()
    wait_until(
        lambda: not [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE],
        what="the browser's processes to end",
    )


def test_a_long_temp_dir_path_still_starts_chromium(
    tmp_path: Path, site: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chromium aborts when its singleton socket's path passes 107 characters: a temp dir
    with a long path (a test's, an eval trial's) must not keep the browser from starting."""
    deep = tmp_path / ("long-temp-dir-" * 4)
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    executor = BrowserExecutor(ExecutorContext(workspace=tmp_path, artifacts=tmp_path))
    try:
        assert browse(executor, f'goto("{site}/index.html")').title == "Test page"
    finally:
        executor.close()
