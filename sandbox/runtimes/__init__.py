"""Runtimes: where the sandbox server runs. All speak to it through `sandbox.client`.

- `base`: the `Runtime` protocol and `ServerRuntime` (restarts, streaming); errors are in
  `sandbox.errors`.
- `local`: the server as a child process of this one (optionally isolated by `bwrap`).
- `docker`: the server in a container; `remote`: a server somebody else runs, by URL + key.
- `agent_user` (the local agent's uid and the folders it writes), `docker_idmap` (a root-owned
  workspace for a non-root agent in Docker).
Modules are imported by name when a runtime is created, so unused ones cost nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

from sandbox.errors import SandboxError
from sandbox.runtimes.base import Runtime

RUNTIMES = {
    "local": ("sandbox.runtimes.local", "LocalRuntime"),
    "docker": ("sandbox.runtimes.docker", "DockerRuntime"),
    "remote": ("sandbox.runtimes.remote", "RemoteRuntime"),
}

__all__ = ["RUNTIMES", "Runtime", "SandboxError", "create_runtime"]


def create_runtime(name: str, **options: Any) -> Runtime:
    """A runtime by name ("local", "docker", "remote") built with `options`; not started yet."""
    try:
        module_name, class_name = RUNTIMES[name]
    except KeyError:
        raise SandboxError(
            f"unknown sandbox runtime {name!r}: use one of {', '.join(sorted(RUNTIMES))}"
        ) from None
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise SandboxError(f"the {name!r} runtime is not available in this installation") from exc
    runtime: Runtime = getattr(module, class_name)(**options)
    return runtime
