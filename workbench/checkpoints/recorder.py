"""After every action that can change files, ask the sandbox to checkpoint the workspace.

Step N is the session's Nth action (0: before the first). A checkpoint that fails (no git in
the sandbox, a full disk) is said once, as an error event, and checkpoints stop for the session;
the run goes on. A sandbox that cannot be reached is left for the next action to report. What
each step changed is recorded as a `CheckpointEvent`, which `workbench checkpoints|rewind|diff`
read (`workbench/cli/checkpoints.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from sandbox.errors import SandboxError
from sandbox.protocol import CheckpointAction, CheckpointObservation
from sandbox.runtimes.base import Runtime
from workbench.config.schema import CheckpointsConfig
from workbench.events import ActionEvent, CheckpointEvent, ErrorEvent, Event
from workbench.tools.registry import REGISTRY

log = logging.getLogger(__name__)


class Checkpointer:
    """Takes the checkpoints of one session's workspace through its runtime."""

    def __init__(
        self,
        config: CheckpointsConfig,
        runtime: Runtime,
        next_id: Callable[[], int],
        emit: Callable[[Event], None],
    ) -> None:
        self.config = config
        self.runtime = runtime
        self._next_id = next_id
        self._emit = emit
        self.actions = 0
        """Actions so far in the session: the next one is step `actions + 1`."""
        self.enabled = config.enabled
        self._started = False

    async def start(self, actions_before: int) -> None:
        """The workspace before the next action, once per controller: step 0 in a new
        session, the step reached so far in a resumed one (`actions_before` actions done)."""
        if not self._started:
            self._started = True
            self.actions = actions_before
            if self.enabled:
                await self._take(self.actions, None)

    async def after(self, event: ActionEvent) -> None:
        """Count `event` as a step; checkpoint if its tool can change files."""
        self.actions += 1
        if self.enabled and REGISTRY.for_action(event.action).changes_files:
            await self._take(self.actions, event.id)

    async def _take(self, step: int, cause: int | None) -> None:
        action = CheckpointAction(
            label=str(step),
            max_file_bytes=int(self.config.max_file_mb * 1024 * 1024),
            ignore=list(self.config.ignore),
        )
        try:
            observation = await self.runtime.execute(action)
        except SandboxError as exc:
            # The sandbox itself is in trouble: the next action finds out and says so.
            log.warning("no checkpoint of step %d: %s", step, exc)
            return
        why = getattr(observation, "content", "unexpected answer")
        if not isinstance(observation, CheckpointObservation):
            self.enabled = False
            message = f"checkpoints are off for this session: {why}"
            self._emit(ErrorEvent(id=self._next_id(), error_kind="checkpoint", message=message))
            return
        self._emit(
            CheckpointEvent(
                id=self._next_id(),
                step=step,
                cause=cause,
                commit=observation.commit,
                added=observation.added,
                changed=observation.changed,
                deleted=observation.deleted,
                skipped=observation.skipped,
                seconds=observation.seconds,
            )
        )
