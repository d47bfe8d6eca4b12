"""litellm, imported once and quietly: lazily (its import costs seconds of CPU), on the first
call or earlier through `await warm_up()` in a worker thread; `client.prime_litellm()` then does
the lazy imports of a first call ahead of time. Before the import it is made to use its bundled
price map (no network); afterwards its stdout/stderr chatter is silenced and what the import
left in memory is frozen out of the garbage collector's full collections. OpenAI-style models
go through litellm's own HTTP handler rather than the OpenAI SDK (see `client.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import logging
import os
import threading
import warnings
from typing import Any

_BASE_HANDLER_ENV = "EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER"
_LITELLM_ENV = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # its price map stays local: no network
    _BASE_HANDLER_ENV: "true",
}
# Read once, at litellm's import, so set only for it (a local sandbox inherits our environment):
# 0 stops litellm from copying every request's message history after each call to shorten
# base64 images in its logging payload, which nothing here reads.
_IMPORT_ONLY_ENV = {"MAX_BASE64_LENGTH_FOR_LOGGING": "0"}


def _set_litellm_env() -> None:
    for name, value in _LITELLM_ENV.items():
        os.environ.setdefault(name, value)


# Set early too, in case something else imports litellm first.
_set_litellm_env()

SDK_PROVIDERS = frozenset({"azure", "text-completion-openai"})  # OpenAI SDK whatever the flag
_litellm: Any = None
_import_lock = threading.Lock()
_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")


def load_litellm() -> Any:
    """Import and quiet litellm once (blocking: seconds the first time; call from a thread)."""
    global _litellm
    with _import_lock:
        if _litellm is None:
            _set_litellm_env()
            added = [name for name in _IMPORT_ONLY_ENV if name not in os.environ]
            os.environ.update({name: _IMPORT_ONLY_ENV[name] for name in added})
            try:
                import litellm
            finally:
                for name in added:
                    os.environ.pop(name, None)
            # litellm's import leaves ~300 000 long-lived objects (and almost no garbage) that
            # every full collection would walk again: ~0.2-0.3 s of a stalled loop or UI each
            # time. Frozen, they are left out of collections; refcounting still frees them.
            gc.freeze()

            if _openai_sdk_in_use():
                import_openai_resources()

            # Its own deprecation warnings would print over a TUI.
            warnings.filterwarnings("ignore", module=r"litellm(\.|$)")
            litellm.suppress_debug_info = True
            # `turn_off_message_logging` stays off: it only matters to logging callbacks, and we
            # register none; turned on, litellm deep-copies every request's whole message
            # history after each call to blank it out of a payload nothing reads.
            for name in _LITELLM_LOGGERS:
                logger = logging.getLogger(name)
                for handler in list(logger.handlers):
                    logger.removeHandler(handler)
                logger.addHandler(logging.NullHandler())
                logger.setLevel(logging.WARNING)
            _litellm = litellm
    return _litellm


def _openai_sdk_in_use() -> bool:
    """Whether `openai/` models go through the OpenAI SDK (the flag above set to false)."""
    return os.environ.get(_BASE_HANDLER_ENV, "").strip().lower() != "true"


def import_openai_resources() -> None:
    """The OpenAI SDK's chat resources, which it would import on its first request (~0.5 s)."""
    with contextlib.suppress(ImportError):
        importlib.import_module("openai.resources.chat")


async def warm_up() -> None:
    """Import litellm in a worker thread so the first request does not pay for it."""
    if _litellm is None:
        await asyncio.to_thread(load_litellm)


def loaded_litellm() -> Any:
    """litellm if it was imported already, else None (the caller imports it off the loop)."""
    return _litellm
