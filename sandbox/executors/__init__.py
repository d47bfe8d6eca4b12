"""Executors: one module per family of actions, registered by name in `base`.

- `bash`: the persistent shell (pexpect pty), streams output while a command runs.
- `files`: the `str_replace_editor` contract.
- `jupyter`: an IPython kernel through jupyter_client.
- `browser`: BrowserGym driving Debian's Chromium (optional: missing Chromium is reported).
- `checkpoints`: the workspace's checkpoints (`sandbox/checkpoints.py`; needs git).
- `mcp`: MCP servers started inside the sandbox, and calls to their tools (needs `mcp`).
Importing a module registers it; heavy imports happen when the executor is first built.

`register_builtin_executors` registers them all without importing their modules (~25 ms the
server's start would spend): `BUILTIN` names each one's action kinds and its availability check
(cheap: a `find_spec`, a `which`), and its module is imported when it is first built, where it
registers itself again, the same way.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `base` imports the protocol (pydantic): not for the browser worker's start
    from sandbox.executors.base import Executor, ExecutorContext, ExecutorFactory


def always() -> str | None:
    """An executor that can run wherever the sandbox does."""
    return None


def jupyter_missing() -> str | None:
    """None when jupyter_client and ipykernel are installed for this Python, else what's missing."""
    missing = [m for m in ("jupyter_client", "ipykernel") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} not installed for {sys.executable}; "
        "install them with `pip install jupyter_client ipykernel`."
    )


def browser_missing() -> str | None:
    """None when BrowserGym and Chromium are here, otherwise what is missing."""
    if importlib.util.find_spec("browsergym") is None:
        return "BrowserGym is not installed (pip install browsergym-core)."
    from sandbox.executors.browser_worker import chromium_path

    if chromium_path() is None:
        return (
            "Chromium was not found. Install it (apt-get install chromium) or set "
            "WORKBENCH_CHROMIUM to its path."
        )
    return None


def git_missing() -> str | None:
    """None when git is here (the checkpoints need it)."""
    return None if shutil.which("git") else "git is not installed in the sandbox"


def mcp_missing() -> str | None:
    """None when the `mcp` package is here (MCP servers are started with it)."""
    if importlib.util.find_spec("mcp") is None:
        return "the `mcp` Python package is not installed in the sandbox (pip install mcp)"
    return None


BUILTIN: dict[str, tuple[tuple[str, ...], Callable[[], str | None]]] = {
    "bash": (("run", "set_env"), always),
    "files": (("edit",), always),
    "jupyter": (("ipython",), jupyter_missing),
    "browser": (("browse", "browse_task_start", "browse_task_score"), browser_missing),
    "checkpoints": (("checkpoint", "restore"), git_missing),
    "mcp": (("mcp_list", "mcp_call"), mcp_missing),
}
"""Name -> (the action kinds it handles, whether it can run here): what its module registers."""


def load_builtin_executors(names: Sequence[str] = tuple(BUILTIN)) -> None:
    """Import the built-in executor modules (`names`: some of them) so that they register."""
    for name in names:
        try:
            importlib.import_module(f"sandbox.executors.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"sandbox.executors.{name}":
                raise


def register_builtin_executors() -> None:
    """Register every built-in executor not registered yet, its module imported when it is
    first built (a module imported before keeps the registration it made)."""
    from sandbox.executors.base import register, registrations

    known = registrations()
    for name, (kinds, available) in BUILTIN.items():
        if name not in known:
            register(name, kinds, _importing(name), available)


def _importing(name: str) -> ExecutorFactory:
    """A factory that imports executor `name`'s module (which registers its own), then builds."""

    def build(context: ExecutorContext) -> Executor:
        from sandbox.executors.base import ExecutorUnavailable, registrations

        load_builtin_executors((name,))
        factory = registrations()[name].factory
        if factory is build:  # the module did not register itself: never loop
            raise ExecutorUnavailable(f"the '{name}' executor's module did not register it")
        return factory(context)

    return build
