"""Defect 14 of issue 14: every browser start left a `playwright-artifacts-*` folder in the
temp directory. Real Chromium, started and stopped as the sandbox does."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from sandbox.executors.base import ExecutorContext
from sandbox.executors.browser import BrowserExecutor, browser_unavailable_reason
from sandbox.protocol import BrowseAction, BrowseObservation

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        browser_unavailable_reason() is not None and not os.environ.get("CI"),
        reason=str(browser_unavailable_reason()),
    ),
]


@pytest.mark.timeout(120)
def test_a_browser_start_and_stop_leaves_nothing_in_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Short: Chromium's socket paths under it must stay within the 108 bytes a socket allows.
    temp = Path(tempfile.mkdtemp(prefix="wb-t-", dir="/tmp"))
    request_cleanup = lambda: shutil.rmtree(temp, ignore_errors=True)  # noqa: E731
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.setenv("TMPDIR", str(temp))  # the worker, Playwright's driver and Chromium
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "a").mkdir()
    for _ in range(2):  # each start left one more
        browser = BrowserExecutor(ExecutorContext(workspace=workspace, artifacts=tmp_path / "a"))
        try:
            page = browser.execute(BrowseAction(action='goto("about:blank")'))
            assert isinstance(page, BrowseObservation), page
        finally:
            browser.close()
    try:
        left = sorted(path.name for path in temp.iterdir())
        assert left == [], left
    finally:
        request_cleanup()
