"""What is settled before a session starts, for both front ends: which workspace a resumed
session works in, whether a home-like workspace may be used, and the project config's trust.

UI-free. Each check either passes, refuses (`WorkspaceRefused`, exit code
`WORKSPACE_REFUSED`), or, where a person is at the screen, returns a `StartQuestion` the TUI
asks before the sandbox starts. Headless never asks: `--workspace` and `--yes` answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from workbench.security.home_guard import home_reasons, refusal


class WorkspaceRefused(ValueError):
    """The workspace cannot be used without the person's explicit choice; says how to give it."""


@dataclass(frozen=True)
class StartQuestion:
    """A yes/no question the TUI asks before the sandbox starts (no: the app quits)."""

    title: str
    body: str
    yes: str


def resumed_workspace(
    current: Path, logged: Path, session_id: str, *, confirmed: bool, headless: bool
) -> tuple[Path, StartQuestion | None]:
    """The workspace a resumed session works in when `--workspace` was not given: the log's
    (`logged`) once confirmed; refused headless without `--yes`; the TUI asks."""
    current, logged = current.resolve(), logged.resolve()
    if current == logged or confirmed:
        return logged, None
    said = (
        f"Session {session_id} worked in {logged}, not in the current folder {current}. A "
        "session log names its own workspace, and a log someone else made can name any folder."
    )
    if headless:
        raise WorkspaceRefused(
            f"{said} Fix: give --yes to continue it in {logged}, or --workspace DIR to choose "
            "the folder."
        )
    question = StartQuestion(
        "Continue in another folder?",
        f"{said}\n\nContinue the session in {logged}? (To work in another folder, quit and "
        "give --workspace DIR.)",
        "Yes, continue there",
    )
    return logged, question


def home_check(
    workspace: Path, *, named: bool, confirmed: bool, headless: bool
) -> StartQuestion | None:
    """Refuse a home-like `workspace` unless `--workspace` named it (`named`) and the person
    confirms (`--yes`; the TUI asks). Its dotfiles stay read-only to the agent either way."""
    reasons = home_reasons(workspace)
    if not reasons:
        return None
    if not named:
        how = "--workspace DIR --yes" if headless else "--workspace DIR, then confirm"
        raise WorkspaceRefused(refusal(workspace, reasons, how))
    if confirmed:
        return None
    if headless:
        raise WorkspaceRefused(refusal(workspace, reasons, "add --yes to confirm it"))
    return StartQuestion(
        "Work in a home folder?",
        f"The workspace {workspace} looks like a home folder ({'; '.join(reasons)}). The "
        "agent can read and change the files in it. Its dotfiles and dot-folders (shell "
        "start-up files, keys) stay read-only to the agent.",
        "Yes, work here",
    )
