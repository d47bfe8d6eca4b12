"""The controller's side of stuck detection: each step recorded, the agent warned once, the run
stopped if the pattern is still there at the next step (`stuck.py` finds the patterns)."""

from __future__ import annotations

from workbench.agent.messages import observation_text, tool_arguments
from workbench.controller.event_hub import EventHub
from workbench.controller.run_stop import RunStop
from workbench.controller.stuck import Step, StuckDetector
from workbench.events import ActionEvent, AnyObservation, MessageEvent
from workbench.tools.registry import REGISTRY

STUCK_WARNING = (
    "You seem to be stuck: {why}. Repeating it will not help. Step back, think about why it "
    'fails, and try a different approach, or call finish with outcome "gave_up" if you '
    "cannot go on. If this continues, the session will be stopped."
)


class StuckWatch:
    """Records the steps of one controller's runs and acts on a loop among them."""

    def __init__(self, hub: EventHub, threshold: int) -> None:
        self._hub = hub
        self._detector = StuckDetector(threshold)
        self._warned = False

    def reset(self) -> None:
        """Forget the steps: a new run starts clean."""
        self._detector.reset()
        self._warned = False

    def record(self, event: ActionEvent, observation: AnyObservation) -> None:
        """Remember an action and its result, reduced to comparable text."""
        text = observation_text(observation)
        failed = REGISTRY.for_observation(observation).failed(observation)
        args = tool_arguments(event.action, None)
        self._detector.record(Step(f"{event.tool_name} {args}", text, text if failed else None))

    def check(self) -> None:
        """Warn the agent at the first sign of a loop; raise `RunStop` if it is still stuck."""
        why = self._detector.check()
        if why is None:
            self._warned = False
            return
        if self._warned:
            raise RunStop("stuck", f"still stuck after a warning: {why}")
        self._warned = True
        text = STUCK_WARNING.format(why=why)
        self._hub._emit(MessageEvent(id=self._hub._next_id(), source="environment", text=text))
