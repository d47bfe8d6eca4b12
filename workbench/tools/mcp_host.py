"""MCP servers the person trusts to run on the host (`sandbox = false`), as they would without
workbench: the sandbox's own `mcp` executor, in this process and unconfined.

They start as the person, in `/` (not the workspace, where the agent could plant a module
they would load), with the SDK's minimal environment plus their own `env`, and see the
person's files, network and caches. Their pictures go to the runtime's artifact folder where
it has one on this machine (the local runtime).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.executors.base import ExecutorContext
from sandbox.executors.mcp import McpExecutor

if TYPE_CHECKING:
    from sandbox.protocol import Action, Observation
    from sandbox.runtimes.base import Runtime


class HostServers:
    """The `sandbox = false` MCP servers of one session, run by this process."""

    def __init__(self, runtime: Runtime, workspace: Path) -> None:
        artifacts = getattr(runtime, "artifacts", None)
        if not isinstance(artifacts, Path):
            self._tmp = tempfile.TemporaryDirectory(prefix="workbench-mcp-")
            artifacts = Path(self._tmp.name)
        artifacts.mkdir(parents=True, exist_ok=True)
        self.executor = McpExecutor(ExecutorContext(workspace=workspace, artifacts=artifacts))

    async def execute(self, action: Action) -> Observation:
        """Carry out an `mcp_list` or `mcp_call` on the host, off the event loop."""
        return await asyncio.to_thread(self.executor.execute, action)

    def close(self) -> None:
        """Stop the servers."""
        self.executor.close()
