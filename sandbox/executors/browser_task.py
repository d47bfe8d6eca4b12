"""BrowserGym's evaluation mode inside the browser worker: a benchmark task's environment.

`make_task_env("miniwob.click-test", ...)` builds the environment BrowserGym registers for that
id (`gym.make("browsergym/<id>", tags_to_mark="all")`, as the reference's `browsergym_eval_env`
does) on the worker's own Playwright. MiniWoB's pages come from the installed `miniwob` package
as `file://` URLs (`MINIWOB_URL`), so an episode needs no network: it runs under the sandbox's
network policy "off". The task keeps its own Playwright timeout (5 s for MiniWoB) rather than
the reference's 100 s, so a step on a missing element fails inside the executor's step limit;
only its first page gets longer (`browser_worker.TASK_START_TIMEOUT_MS`: a loaded machine).

The goal becomes text plus image artifacts (`goal_parts`); each step's reward, done and the
task's message come from `env.step` and the chat (`task_message`). The episode's record (all
rewards, the best) is the executor's (`browser_episode.py`), so it survives a worker crash.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import importlib
import importlib.util
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCHMARK_PACKAGES = {"miniwob": "browsergym.miniwob"}
"""Benchmark -> the module whose import registers its tasks (others: `browsergym.<name>`)."""
PIP_NAMES = {"miniwob": "browsergym-miniwob==0.14.3 and miniwob==1.1.0 (--no-deps)"}
IMAGE_TYPES = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


class TaskUnavailable(Exception):
    """The task cannot be run here; the message says why and what to install or fix."""

    error_kind = "unavailable"


class UnknownTask(TaskUnavailable):
    """No task of that id is registered; the message names a few that are."""

    error_kind = "bad_action"


def miniwob_url() -> str | None:
    """`MINIWOB_URL`, else the `file://` URL of the installed `miniwob` package's task pages."""
    configured = os.environ.get("MINIWOB_URL")
    if configured:
        return configured
    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return None
    pages = Path(next(iter(spec.submodule_search_locations))) / "html" / "miniwob"
    return pages.as_uri() + "/" if (pages / "click-test.html").is_file() else None


def _register(benchmark: str) -> None:
    """Import the module that registers `benchmark`'s tasks with gymnasium."""
    if benchmark == "miniwob":
        url = miniwob_url()
        if url is None:
            raise TaskUnavailable(
                "MiniWoB's task pages are not installed here: pip install --no-deps "
                "miniwob==1.1.0 (or set MINIWOB_URL to a folder or server holding them)."
            )
        os.environ["MINIWOB_URL"] = url
    module = BENCHMARK_PACKAGES.get(benchmark, f"browsergym.{benchmark}")
    try:
        importlib.import_module(module)
    except ImportError as exc:
        install = PIP_NAMES.get(benchmark, f"browsergym-{benchmark}")
        raise TaskUnavailable(
            f"BrowserGym's '{benchmark}' benchmark is not installed here ({exc}); install "
            f"{install}."
        ) from exc


def make_task_env(task_id: str, action_mapping: Callable[[str], str], **kwargs: Any) -> Any:
    """The BrowserGym environment of `task_id` (`<benchmark>.<task>`), not reset yet."""
    import gymnasium as gym

    benchmark = task_id.split(".", 1)[0]
    _register(benchmark)
    name = f"browsergym/{task_id}"
    if name not in gym.registry:
        known = sorted(key.removeprefix("browsergym/") for key in gym.registry)
        ours = [key for key in known if key.startswith(f"{benchmark}.")]
        sample = difflib.get_close_matches(task_id, ours, n=5, cutoff=0.5) or ours[:5]
        raise UnknownTask(
            f"BrowserGym has no task '{task_id}'. Tasks of '{benchmark}' like it: "
            f"{', '.join(sample) or '(none registered)'}."
        )
    env = gym.make(name, tags_to_mark="all", headless=True, action_mapping=action_mapping, **kwargs)
    return env.unwrapped


def goal_parts(
    goal_object: Sequence[dict[str, Any]], save: Callable[[bytes, str], str]
) -> tuple[str, list[str]]:
    """The goal's text, and its images saved through `save(bytes, extension) -> name`; an
    image given by URL rather than inline data is named in the text instead."""
    texts: list[str] = []
    images: list[str] = []
    for part in goal_object:
        if part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif part.get("type") == "image_url":
            source = part.get("image_url")
            url = str(source.get("url", "") if isinstance(source, dict) else source)
            inline = _data_url(url)
            if inline is None:
                texts.append(f"[image: {url}]")
            else:
                images.append(save(*inline))
    return "\n".join(text for text in texts if text), images


def _data_url(url: str) -> tuple[bytes, str] | None:
    """The bytes and file extension of a base64 `data:image/...` URL, else None."""
    head, _, body = url.partition(",")
    if not head.startswith("data:") or not head.endswith(";base64"):
        return None
    mime = head[len("data:") : -len(";base64")]
    try:
        return base64.b64decode(body, validate=True), IMAGE_TYPES.get(mime, "png")
    except (binascii.Error, ValueError):
        return None


def task_message(messages: Sequence[dict[str, Any]], since: int, info: dict[str, Any]) -> str:
    """What the task said in the chat after message number `since` (its `user` messages),
    and why it ended the episode if it says (`task_info["error"]`)."""
    said = [str(m.get("message", "")) for m in list(messages)[since:] if m.get("role") == "user"]
    error = info.get("error") if isinstance(info, dict) else None
    if error:
        said.append(str(error))
    return "\n".join(text for text in said if text)
