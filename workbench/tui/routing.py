"""Routing session events to the tool panes, the confirmation panel and the status bar (the
conversation takes every event itself: `ConversationView.add_events`).

The events' models and the tool registry (which pane shows a tool) are imported at the first
event, not before the first paint (the registry loads every tool and the security analyzer).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.screen import ModalScreen
from textual.widgets import TabbedContent

from workbench.tui.widgets.browser import BrowserPane
from workbench.tui.widgets.confirm import ConfirmPanel
from workbench.tui.widgets.conversation import ConversationView
from workbench.tui.widgets.jupyter import JupyterPane
from workbench.tui.widgets.prompt import PromptInput
from workbench.tui.widgets.shell import ShellPane
from workbench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from workbench.events import ActionEvent, Event, ObservationEvent, StateChangedEvent
    from workbench.tui.host import Host
    from workbench.tui.messages import ProgressChanged
    from workbench.tui.widgets.panes import ToolPane

RECENT_EVENTS = 300
"""A loaded session fills the tool panes from its last this-many events (all are in the
conversation)."""


def feed_event(app: Host, event: Event, live: bool = True) -> None:
    """Show one event: in the panes it concerns, then in the conversation."""
    route(app, event, live)
    app.query_one(ConversationView).add_events([event], live=live)


def load_events(app: Host, events: Iterable[Event]) -> None:
    """Show a recorded session: the conversation in one batch (all collapsed), the panes
    with the recent past, the status bar with the totals."""
    from workbench.events import ENDED_STATES, ActionEvent, LLMCallEvent, StateChangedEvent

    batch = list(events)
    status = app.query_one(StatusBar)
    steps, prompt, completion, cost, state = 0, 0, 0, 0.0, status.data.state
    run_steps = status.data.run_steps
    for event in batch:
        if isinstance(event, ActionEvent):
            app.actions[event.id] = event
        elif isinstance(event, LLMCallEvent):  # a step, as `agent.max_iterations` counts
            steps += 1
            run_steps += 1
            prompt += event.prompt_tokens
            completion += event.completion_tokens
            cost += event.cost
        elif isinstance(event, StateChangedEvent):
            if event.state == "running" and (state == "idle" or state in ENDED_STATES):
                run_steps = 0
            state = event.state
    for event in batch[-RECENT_EVENTS:]:
        route(app, event, live=False, account=False)
    status.set(
        steps=status.data.steps + steps,
        run_steps=run_steps,
        state=state,
        cost=status.data.cost + cost,
        prompt_tokens=status.data.prompt_tokens + prompt,
        completion_tokens=status.data.completion_tokens + completion,
    )
    app.query_one(ConversationView).add_events(batch, live=False)


def route(app: Host, event: Event, live: bool, account: bool = True) -> None:
    """Show `event` where it belongs besides the conversation (`account`: count it in the
    status bar's totals; `live`: it happens now, not in a recording)."""
    from workbench.events import (
        ActionEvent,
        ConfirmationDecisionEvent,
        ConfirmationRequestEvent,
        ErrorEvent,
        LLMCallEvent,
        LLMRetryEvent,
        MessageEvent,
        ObservationEvent,
        StateChangedEvent,
    )

    if isinstance(event, ActionEvent):
        _action(app, event, live)
    elif isinstance(event, ObservationEvent):
        _observation(app, event)
    elif isinstance(event, ConfirmationRequestEvent):
        pane = pane_of(app, app.actions.get(event.cause))
        if pane is not None:
            pane.show_confirmation(None)
        if live:
            typing = app.query_one(PromptInput).is_typing()
            panel = app.query_one(ConfirmPanel)
            panel.ask(app.actions.get(event.cause), event, take_focus=not typing)
    elif isinstance(event, ConfirmationDecisionEvent):
        panel = app.query_one(ConfirmPanel)
        if panel.request is not None and panel.request.cause == event.cause:
            panel.hide()
        pane = pane_of(app, app.actions.get(event.cause))
        if pane is not None:
            pane.show_confirmation(event.approved)
    elif isinstance(event, MessageEvent) and event.source == "user" and live:
        app.query_one(PromptInput).delivered(event.text)
    elif isinstance(event, StateChangedEvent) and account:
        _state(app, event, live)
    elif isinstance(event, LLMCallEvent) and account:
        status = app.query_one(StatusBar)
        status.set(
            steps=status.data.steps + 1,  # one reply is one step, however many calls
            run_steps=status.data.run_steps + 1,
            prompt_tokens=status.data.prompt_tokens + event.prompt_tokens,
            completion_tokens=status.data.completion_tokens + event.completion_tokens,
            cost=status.data.cost + event.cost,
            model=event.model,
        )
        if live:
            status.set(llm="ready")  # it answered
    elif live and isinstance(event, LLMRetryEvent):
        app.query_one(StatusBar).set(llm="retrying")
    elif live and isinstance(event, ErrorEvent) and event.error_kind.startswith("llm_"):
        app.query_one(StatusBar).set(llm="failing")  # loaded; the provider did not answer


def _action(app: Host, event: ActionEvent, live: bool) -> None:
    from workbench.tools.registry import REGISTRY

    app.actions[event.id] = event
    pane = pane_of(app, event)
    if pane is not None:
        pane.show_action(event)
        if live:
            name = REGISTRY.for_action(event.action).pane or ""
            app.query_one("#tools", TabbedContent).active = f"tab-{name}"


def _observation(app: Host, event: ObservationEvent) -> None:
    from sandbox.protocol import ErrorObservation
    from workbench.events import ToolResultObservation
    from workbench.tools.registry import REGISTRY

    pane = tool_pane(app, REGISTRY.for_observation(event.observation).pane)
    if pane is None and isinstance(event.observation, ErrorObservation):
        pane = pane_of(app, app.actions.get(event.cause or -1))  # e.g. "busy"
    if pane is not None:
        pane.show_observation(event)
    observation = event.observation
    if isinstance(observation, ToolResultObservation) and observation.images:
        # An MCP tool's picture, drawn in its result's cell once fetched.
        keys = (f"e{event.id}", f"e{event.cause}")
        app.background(_draw_result_image(app, keys, observation.images[0]), "image")


async def _draw_result_image(app: Host, keys: tuple[str, ...], name: str) -> None:
    data = await app.load_artifact(name)
    app.query_one(ConversationView).show_image(keys, data)


def _state(app: Host, event: StateChangedEvent, live: bool) -> None:
    from workbench.events import ENDED_STATES

    status = app.query_one(StatusBar)
    ended = status.data.state in ENDED_STATES
    if event.state == "running" and (status.data.state == "idle" or ended):
        status.set(run_steps=0)  # a new run: the controller counts its steps afresh
    status.set(state=event.state)
    if event.state == "paused" or event.state in ENDED_STATES:
        status.set(pending="")  # "pausing…" came true, or the run ended first
    if event.state in ENDED_STATES and app.paused and live:
        app.action_toggle_pause()  # a pause asked for this run does not hold the next
    data = status.data
    if event.state == "running" and live:
        if data.started is None:
            status.set(started=app.clock())
        elif data.ended is not None:  # a follow-up task: the clock goes on from there
            status.set(started=data.started + app.clock() - data.ended, ended=None)
    elif event.state in ENDED_STATES and data.started is not None:
        status.set(ended=app.clock())


def tool_pane(app: Host, name: str | None) -> ToolPane | None:
    """The tool pane with id `name`, if there is one."""
    panes: dict[str, ToolPane] = {
        "shell": app.query_one(ShellPane),
        "jupyter": app.query_one(JupyterPane),
        "browser": app.query_one(BrowserPane),
    }
    return panes.get(name or "")


def pane_of(app: Host, event: ActionEvent | None) -> ToolPane | None:
    """The tool pane that shows the action's tool, if it has one."""
    from workbench.tools.registry import REGISTRY

    if event is None:
        return None
    return tool_pane(app, REGISTRY.for_action(event.action).pane)


def show_progress(app: Host, message: ProgressChanged) -> None:
    """Background start-up moved on: the status bar, and its news as a toast (held while a
    question is on screen, see `show_held`)."""
    app.query_one(StatusBar).set(**{message.part: message.state})
    if message.detail:
        failed = message.state in ("failed", "dead")
        if not failed and isinstance(app.screen, ModalScreen):
            app.held_news.append(message)  # e.g. the limits, under the trust question
            return
        app.notify(
            message.detail,
            title=message.part,
            severity="error" if failed else "information",
            timeout=10 if failed else 8,  # the limits in force take a few lines to read
            markup=False,
        )


def show_held(app: Host, screen: object) -> None:
    """Back from a question: the start-up news it covered."""
    if isinstance(screen, ModalScreen):
        return
    held, app.held_news = app.held_news, []
    for message in held:
        show_progress(app, message)
