"""BrowserGym's evaluation mode in the sandbox's browser: real MiniWoB pages from the installed
`miniwob` package, a real headless Chromium confined like the ordinary browser (nested bwrap,
network "off"), played by known-good and wrong sequences of browse actions."""

from __future__ import annotations

import base64
import os
import re
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from net_support import outside_server

from sandbox.executors.base import ExecutorContext
from sandbox.executors.browser import BrowserExecutor, browser_unavailable_reason
from sandbox.executors.browser_task import goal_parts
from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    BrowseTaskScoreAction,
    BrowseTaskScoreObservation,
    BrowseTaskStartAction,
    ErrorObservation,
    Observation,
)
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(browser_unavailable_reason() is not None, reason="no browser here"),
    pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work"),
]


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[LocalRuntime]:
    """A sandbox with no network at all: only loopback inside its own namespace."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    sandbox = LocalRuntime(workspace, isolation="bwrap", network="off", disable=["jupyter"])
    await sandbox.start()
    try:
        yield sandbox
    finally:
        await sandbox.close()


async def start(runtime: LocalRuntime, task_id: str, seed: int = 1) -> BrowseObservation:
    """Start an episode: the first page, with the goal and a zero reward."""
    page = await runtime.execute(BrowseTaskStartAction(task_id=task_id, seed=seed))
    assert isinstance(page, BrowseObservation), page
    assert page.task is not None and page.task.task_id == task_id
    assert page.task.goal and page.task.steps == 0 and not page.task.done
    assert page.url.startswith("file://") and page.url.endswith(f"{task_id.split('.')[1]}.html")
    return page


async def step(runtime: LocalRuntime, action: str) -> BrowseObservation:
    page = await runtime.execute(BrowseAction(action=action))
    assert isinstance(page, BrowseObservation), page
    assert page.task is not None
    return page


async def score(runtime: LocalRuntime) -> BrowseTaskScoreObservation:
    answer = await runtime.execute(BrowseTaskScoreAction())
    assert isinstance(answer, BrowseTaskScoreObservation), answer
    return answer


def bid(page: BrowseObservation, role: str, name: str) -> str:
    match = re.search(rf"\[(\w+)\] {role} '{re.escape(name)}'", page.axtree)
    assert match, f"no {role} {name!r} in:\n{page.axtree}"
    return match.group(1)


def quoted(goal: str) -> str:
    match = re.search(r'"([^"]+)"', goal)
    assert match, goal
    return match.group(1)


async def test_click_test_played_right_scores_1_and_ends(runtime: LocalRuntime) -> None:
    page = await start(runtime, "miniwob.click-test")
    assert page.task is not None and page.task.goal == "Click the button."
    assert page.screenshot and (await runtime.download(page.screenshot)).startswith(b"\x89PNG")
    done = await step(runtime, f'click("{bid(page, "button", "Click Me!")}")')
    assert done.task is not None
    assert (done.task.reward, done.task.done, done.task.best_reward) == (1.0, True, 1.0)
    result = await score(runtime)
    assert (result.best_reward, result.rewards, result.done, result.steps) == (1.0, [1.0], True, 1)
    after: Observation = await runtime.execute(BrowseAction(action="noop()"))
    assert isinstance(after, ErrorObservation) and "is over" in after.content, after
    assert (await score(runtime)).rewards == [1.0]  # a refused step counts nothing


async def test_click_button_right_scores_1_and_wrong_scores_0(runtime: LocalRuntime) -> None:
    page = await start(runtime, "miniwob.click-button", seed=3)
    assert page.task is not None
    target = quoted(page.task.goal)
    done = await step(runtime, f'click("{bid(page, "button", target)}")')
    assert done.task is not None and (done.task.reward, done.task.done) == (1.0, True)
    assert (await score(runtime)).best_reward == 1.0

    page = await start(runtime, "miniwob.click-button", seed=3)  # a fresh episode
    assert (await score(runtime)).rewards == []
    assert page.task is not None
    names = re.findall(r"\[\w+\] button '([^']+)'", page.axtree)
    wrong = next(name for name in names if name != quoted(page.task.goal))
    done = await step(runtime, f'click("{bid(page, "button", wrong)}")')
    assert done.task is not None and (done.task.reward, done.task.done) == (0.0, True)
    result = await score(runtime)
    assert (result.best_reward, result.done) == (0.0, True)


async def test_enter_text_right_scores_1(runtime: LocalRuntime) -> None:
    page = await start(runtime, "miniwob.enter-text", seed=5)
    assert page.task is not None
    text = quoted(page.task.goal)
    box = re.search(r"\[(\w+)\] textbox", page.axtree)
    assert box, page.axtree
    filled = await step(runtime, f'fill("{box.group(1)}", "{text}")')
    assert filled.task is not None and (filled.task.reward, filled.task.done) == (0.0, False)
    done = await step(runtime, f'click("{bid(page, "button", "Submit")}")')
    assert done.task is not None and (done.task.reward, done.task.done) == (1.0, True)
    result = await score(runtime)
    assert (result.best_reward, result.rewards) == (1.0, [0.0, 1.0])


async def test_focus_text_left_undone_scores_0(runtime: LocalRuntime) -> None:
    """Steps that do not do the task (an element that is not there, a scroll) score 0 and
    leave the episode running: the run's time limit ends it."""
    await start(runtime, "miniwob.focus-text", seed=2)
    missing = await step(runtime, 'click("9999")')
    assert missing.error and "9999" in missing.error
    scrolled = await step(runtime, "scroll(0, 50)")
    assert scrolled.task is not None and not scrolled.task.done
    result = await score(runtime)
    assert (result.best_reward, result.rewards, result.done) == (0.0, [0.0, 0.0], False)


async def test_javascript_urls_cannot_set_the_reward(runtime: LocalRuntime) -> None:
    """`goto("javascript:...")` would run code in the task's page and set its reward: during
    an episode it is refused, however the scheme is spelled."""
    await start(runtime, "miniwob.click-button", seed=3)
    hack = "WOB_RAW_REWARD_GLOBAL=1;WOB_DONE_GLOBAL=true;void 0"
    for url in (f"javascript:{hack}", f" JavaScript:{hack}", f"java\tscript:{hack}"):
        answer = await runtime.execute(BrowseAction(action=f"goto({url!r})"))
        assert isinstance(answer, ErrorObservation) and "javascript: URL" in answer.content
    result = await score(runtime)
    assert (result.best_reward, result.rewards, result.done) == (0.0, [], False)


async def test_the_browser_has_no_network(runtime: LocalRuntime) -> None:
    """The episode above ran with no network: the same browser cannot reach a server that the
    host itself reaches on its own loopback."""
    with outside_server("127.0.0.1") as port:
        await start(runtime, "miniwob.click-test")
        page = await runtime.execute(BrowseAction(action=f'goto("http://127.0.0.1:{port}/")'))
        assert isinstance(page, BrowseObservation), page
        assert page.error and "ERR_CONNECTION_REFUSED" in page.error, page


async def test_bad_ids_and_score_before_start_are_refused(runtime: LocalRuntime) -> None:
    before = await runtime.execute(BrowseTaskScoreAction())
    assert isinstance(before, ErrorObservation) and "browse_task_start" in before.content
    unknown = await runtime.execute(BrowseTaskStartAction(task_id="miniwob.click-tset"))
    assert isinstance(unknown, ErrorObservation) and unknown.error_kind == "bad_action"
    assert "miniwob.click-test" in unknown.content  # it names the tasks that come close
    missing = await runtime.execute(BrowseTaskStartAction(task_id="nosuchbench.task"))
    assert isinstance(missing, ErrorObservation) and missing.error_kind == "unavailable"
    assert "not installed" in missing.content


def test_a_browser_that_dies_ends_the_episode_and_keeps_its_rewards(tmp_path: Path) -> None:
    """The executor, not the worker, keeps the record: a crash loses no reward."""
    (tmp_path / "ws").mkdir()
    (tmp_path / "art").mkdir()
    context = ExecutorContext(workspace=tmp_path / "ws", artifacts=tmp_path / "art")
    browser = BrowserExecutor(context)
    try:
        page = browser.execute(BrowseTaskStartAction(task_id="miniwob.enter-text", seed=5))
        assert isinstance(page, BrowseObservation), page
        box = re.search(r"\[(\w+)\] textbox", page.axtree)
        assert box, page.axtree
        filled = browser.execute(BrowseAction(action=f'fill("{box.group(1)}", "x")'))
        assert isinstance(filled, BrowseObservation) and filled.task is not None
        assert browser._proc is not None
        os.killpg(browser._proc.pid, signal.SIGKILL)
        browser._proc.wait()
        after = browser.execute(BrowseAction(action="noop()"))
        assert isinstance(after, ErrorObservation) and "episode is over" in after.content
        result = browser.execute(BrowseTaskScoreAction())
        assert isinstance(result, BrowseTaskScoreObservation)
        assert (result.rewards, result.done) == ([0.0], True)
        assert "the browser stopped" in result.content
        again = browser.execute(BrowseAction(action="noop()"))
        assert isinstance(again, ErrorObservation) and "is over" in again.content
    finally:
        browser.close()


def test_goal_images_become_artifacts_and_urls_stay_text() -> None:
    png = b"\x89PNG\r\n\x1a\nfake"
    saved: list[tuple[bytes, str]] = []

    def save(data: bytes, extension: str) -> str:
        saved.append((data, extension))
        return f"goal-{len(saved)}.{extension}"

    inline = "data:image/png;base64," + base64.b64encode(png).decode()
    goal = [
        {"type": "text", "text": "Find this item:"},
        {"type": "image_url", "image_url": {"url": inline}},
        {"type": "image_url", "image_url": "http://127.0.0.1:9/shoe.jpg"},
    ]
    text, images = goal_parts(goal, save)
    assert images == ["goal-1.png"] and saved == [(png, "png")]
    assert text == "Find this item:\n[image: http://127.0.0.1:9/shoe.jpg]"


def test_a_slow_first_page_still_starts_and_steps_keep_the_tasks_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's page takes longer than MiniWoB's own 5 s limit (as on a loaded machine): the
    episode starts, and its steps are still held to the 5 s."""
    import functools
    import http.server
    import time

    import miniwob
    from playwright.sync_api import Error as PlaywrightError

    from sandbox.executors.browser_worker import BrowserSession

    pages = Path(miniwob.__file__).parent / "html"

    class SlowTaskPage(http.server.SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.endswith("/click-test.html"):
                time.sleep(7)  # scripted delay: the slow first page under test
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    (tmp_path / "ws").mkdir()
    (tmp_path / "art").mkdir()
    with outside_server("127.0.0.1", functools.partial(SlowTaskPage, directory=str(pages))) as port:
        monkeypatch.setenv("MINIWOB_URL", f"http://127.0.0.1:{port}/miniwob/")
        session = BrowserSession(tmp_path / "art", tmp_path / "ws", open_ended=False)
        try:
            started = session.start_task("miniwob.click-test", 1)
            assert "Click" in started["goal"], started
            with pytest.raises(PlaywrightError, match="Timeout 5000ms"):
                session.env.page.wait_for_selector("#never-there")
        finally:
            session.close()
