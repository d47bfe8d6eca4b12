"""The browser's own process: BrowserGym's open-ended environment on Debian's Chromium.

Run as `python -m sandbox.executors.browser_worker ARTIFACTS WORKSPACE [--task]`. It reads one
JSON request per line on stdin (`{"action": "goto('...')"}`, or `{"task_start": "miniwob.
click-test", "seed": 1}` to run an evaluation task instead: `browser_task.py`; `--task` skips
opening the blank page first) and answers one JSON line on stdout; a task's steps also answer
their `task`: reward, done and the task's message.
Playwright's sync API lives here, away from the server's event loop, and a crash or a hung
page takes down only this process. Each answer names the screenshot file and the files the
action downloaded into the workspace (never over an existing file).
"""

from __future__ import annotations

import functools
import io
import itertools
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from sandbox.executors.browser_task import TaskUnavailable

CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
MAX_TEXT_CHARS = 20_000
DOWNLOAD_WAIT_S = 60.0
"""How long a step waits for downloads it started to finish saving."""
TASK_START_TIMEOUT_MS = 30_000
"""Playwright's limit while an evaluation task's first page loads (a loaded machine can take
longer than a task's own limit, MiniWoB's 5 s; the executor waits 60 s for the start); its
steps get the task's own limit back."""


def chromium_path() -> str | None:
    """Where Chromium is: `WORKBENCH_CHROMIUM`, else Debian's or Ubuntu's usual places."""
    configured = os.environ.get("WORKBENCH_CHROMIUM")
    if configured:
        return configured if Path(configured).exists() else None
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"):
        if Path(candidate).exists():
            return candidate
    return None


class _TextChat:
    """Stands in for BrowserGym's chat window, which would launch a second browser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.messages: list[dict[str, Any]] = []
        self.recording_start_time = None

    def add_message(self, role: str, msg: str) -> None:
        self.messages.append({"role": role, "timestamp": time.time(), "message": msg})

    def wait_for_user_message(self) -> None:
        return None

    def close(self) -> None:
        return None


def _launch_with_our_chromium(pw: Any, executable: str) -> None:
    """Make every `chromium.launch` use our Chromium and flags (BrowserGym passes its own args)."""
    original = pw.chromium.launch

    def launch(**kwargs: Any) -> Any:
        kwargs["executable_path"] = executable
        kwargs["args"] = list(kwargs.get("args") or []) + CHROMIUM_FLAGS
        return original(**kwargs)

    pw.chromium.launch = launch


class BrowserSession:
    """One BrowserGym environment, stepped with action strings."""

    def __init__(self, artifacts: Path, workspace: Path, open_ended: bool = True) -> None:
        import browsergym.core
        import browsergym.core.env as bg_env
        from browsergym.core.action.highlevel import HighLevelActionSet
        from playwright.sync_api import sync_playwright

        executable = chromium_path()
        if executable is None:
            raise RuntimeError("Chromium was not found (install it: apt-get install chromium)")
        self.artifacts = artifacts
        self.workspace = workspace
        self._names = itertools.count(1)
        self._downloads: list[str] = []
        self._saving = 0
        self._pw = sync_playwright().start()
        _launch_with_our_chromium(self._pw, executable)
        browsergym.core._set_global_playwright(self._pw)
        bg_env.Chat = _TextChat
        self.action_set = HighLevelActionSet(subsets=["chat", "bid", "nav", "tab"], strict=False)
        self.task_id = ""
        """The evaluation task this browser runs (`start_task`), or "" for the open web."""
        self.env: Any = None
        if not open_ended:
            return
        self.env = bg_env.BrowserEnv(
            task_entrypoint=browsergym.core.OpenEndedTask,
            task_kwargs={"start_url": "about:blank"},
            headless=True,
            slow_mo=0,
            pre_observation_delay=0,
            timeout=15_000,
            action_mapping=self.action_set.to_python_code,
            pw_context_kwargs={"accept_downloads": True},
        )
        self.env.reset()
        self._watch_pages()

    def _watch_pages(self) -> None:
        self.env.context.on("page", self._watch_downloads)
        self._watch_downloads(self.env.page)

    def start_task(self, task_id: str, seed: int | None) -> dict[str, Any]:
        """Replace the environment with BrowserGym's for `task_id`, reset with `seed`: the
        first page, the goal's text and its image artifacts."""
        from browsergym.utils.obs import flatten_axtree_to_str

        from sandbox.executors.browser_task import goal_parts, make_task_env

        self._close_env()
        self.task_id = ""
        self.env = make_task_env(
            task_id,
            self.action_set.to_python_code,
            timeout=TASK_START_TIMEOUT_MS,
            pw_context_kwargs={"accept_downloads": True},
        )
        try:
            obs, _info = self.env.reset(seed=seed)
        except BaseException:
            self._close_env()
            raise
        own_limit = getattr(self.env.task, "timeout", None)
        if own_limit:  # the steps as hard as the task means them
            self.env.context.set_default_timeout(own_limit)
        self.task_id = task_id
        self._watch_pages()
        save = functools.partial(self._save_image, kind="goal")
        goal, images = goal_parts(obs.get("goal_object") or (), save)
        answer = self._describe(obs, flatten_axtree_to_str(obs["axtree_object"]))
        return {**answer, "goal": goal or str(obs.get("goal", "")), "goal_images": images}

    def _watch_downloads(self, page: Any) -> None:
        page.on("download", self._save_download)

    def _save_download(self, download: Any) -> None:
        self._saving += 1
        try:
            target = free_path(self.workspace, Path(download.suggested_filename).name)
            download.save_as(target)
            self._downloads.append(os.path.abspath(target))
        finally:
            self._saving -= 1

    def step(self, action: str) -> dict[str, Any]:
        """Run one action string and describe the page after it."""
        from browsergym.utils.obs import flatten_axtree_to_str

        if self.env is None:
            raise RuntimeError("no page is open: the evaluation task did not start")
        self._downloads = []
        said = len(self.env.chat.messages)
        obs, reward, done, truncated, info = self.env.step(action)
        deadline = time.monotonic() + DOWNLOAD_WAIT_S
        while self._saving and time.monotonic() < deadline:
            try:
                self.env.page.wait_for_timeout(50)  # a Playwright call: the saving handler runs
            except Exception:  # the page closed meanwhile; what was saved is reported
                break
        answer = self._describe(obs, flatten_axtree_to_str(obs["axtree_object"]))
        if self.task_id:
            from sandbox.executors.browser_task import task_message

            message = task_message(self.env.chat.messages, said, info.get("task_info") or {})
            task = {"reward": float(reward), "done": bool(done or truncated), "message": message}
            answer["task"] = task
        return answer

    def _describe(self, obs: dict[str, Any], axtree: str) -> dict[str, Any]:
        """The page as the executor answers it: URL, title, text, tree, screenshot, downloads."""
        screenshot = self._save_screenshot(obs.get("screenshot"))
        try:
            text = self.env.page.inner_text("body", timeout=2_000)
        except Exception:  # a page without a body (a PDF, about:blank) has no text to give
            text = ""
        titles = obs.get("open_pages_titles") or ()
        index = int(obs.get("active_page_index", [0])[0]) if len(titles) else 0
        return {
            "url": obs.get("url", ""),
            "title": titles[index] if titles else "",
            "content": _cut(text, MAX_TEXT_CHARS),
            "axtree": _cut(axtree, MAX_TEXT_CHARS),
            "screenshot": screenshot,
            "screenshot_path": os.path.abspath(self.artifacts / screenshot) if screenshot else "",
            "downloads": list(self._downloads),
            "error": obs.get("last_action_error") or None,
        }

    def _save_screenshot(self, pixels: Any) -> str | None:
        if pixels is None:
            return None
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format="PNG")
        return self._save_image(buffer.getvalue(), "png")

    def _save_image(self, data: bytes, extension: str, kind: str = "browser") -> str:
        name = f"{kind}-{os.getpid()}-{next(self._names)}.{extension}"
        (self.artifacts / name).write_bytes(data)
        return name

    def _close_env(self) -> None:
        env, self.env = self.env, None
        if env is not None:
            env.close()

    def close(self) -> None:
        """Close the environment and Playwright."""
        try:
            self._close_env()
        finally:
            self._pw.stop()


def free_path(folder: Path, name: str) -> Path:
    """`folder / name`, or `name (1)`, `name (2)` ... as browsers do when that file exists."""
    name = name if name not in ("", ".", "..") else "download"
    target = folder / name
    stem, suffix = target.stem, target.suffix
    number = 1
    while target.exists():
        target = folder / f"{stem} ({number}){suffix}"
        number += 1
    return target


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def main(argv: list[str]) -> int:
    """Serve step requests on stdin/stdout until stdin closes."""
    artifacts, workspace = Path(argv[0]), Path(argv[1])
    out = sys.stdout
    sys.stdout = sys.stderr  # nothing else may write on the answer channel
    try:
        session = BrowserSession(artifacts, workspace, open_ended="--task" not in argv[2:])
    except Exception as exc:
        out.write(json.dumps({"ready": False, "error": f"{type(exc).__name__}: {exc}"}) + "\n")
        out.flush()
        return 1
    out.write(json.dumps({"ready": True}) + "\n")
    out.flush()
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if "task_start" in request:
                    answer = session.start_task(request["task_start"], request.get("seed"))
                else:
                    answer = session.step(request["action"])
            except TaskUnavailable as exc:
                answer = {"task_error": str(exc), "error_kind": exc.error_kind}
            except Exception as exc:
                answer = {"fatal": f"{type(exc).__name__}: {exc}"}
            out.write(json.dumps(answer) + "\n")
            out.flush()
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
