"""What the app asks as it starts, before the sandbox starts: the start questions the CLI found
(a home folder named as the workspace, a resumed session in another folder; any "no" quits
with `WORKSPACE_REFUSED`), then, once the backend is starting, whether to trust the project's
config (its allow rules apply from then on, and in later sessions until the file changes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from workbench.exit_codes import WORKSPACE_REFUSED
from workbench.tui.screens.start import StartConfirmScreen, TrustProjectScreen

if TYPE_CHECKING:
    from workbench.config.schema import Config
    from workbench.session.start_checks import StartQuestion


class Asker(Protocol):
    """What the start questions use of the app (Textual's own methods)."""

    def notify(self, *args: Any, **kwargs: Any) -> Any:
        """Show a toast."""

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        """Show a screen over the app."""

    def exit(self, *args: Any, **kwargs: Any) -> Any:
        """End the app."""


def ask_then_start(
    app: Asker,
    questions: Sequence[StartQuestion],
    start: Callable[[], None],
    config: Config | None,
) -> None:
    """Ask `questions` one after the other; all answered yes: `start()`, then offer to trust
    the project's config of `config`."""
    left = list(questions)

    def answered(yes: bool | None = True) -> None:
        if not yes:
            app.exit(WORKSPACE_REFUSED)
            return
        if left:
            question = left.pop(0)
            screen = StartConfirmScreen(question.title, question.body, question.yes)
            app.push_screen(screen, answered)
            return
        start()
        offer_trust(app, config)

    answered()


def offer_trust(app: Asker, config: Config | None) -> None:
    """The project's config of `config` has allow rules waiting for trust: ask."""
    state = config.project_trust if config is not None else None
    if config is None or state is None or not state.withheld:
        return

    def answered(yes: bool | None) -> None:
        from workbench.config.project_trust import TRUST_HINT, record

        if not yes:
            app.notify(
                f"Not trusted: the allow rules of {state.path} are not applied. To trust it "
                f"later: ctrl+r then t, or {TRUST_HINT}.",
                severity="warning",
                markup=False,
            )
            return
        try:
            record(state.path, state.digest, state.store)  # the content shown is what was read
        except OSError as exc:
            app.notify(f"Could not record the trust: {exc}", severity="error", markup=False)
            return
        current = config.security.allow
        config.security.allow = [*current, *(r for r in state.withheld if r not in current)]
        config._project_trust = replace(state, trusted=True)
        app.notify(f"Trusted {state.path}: its allow rules apply.", markup=False)

    app.push_screen(TrustProjectScreen(state), answered)
