"""`browser`: drive the sandbox's headless Chromium with BrowserGym action strings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sandbox.protocol import BrowseAction, BrowseObservation, BrowseTaskState
from workbench.display import Cell, first_line
from workbench.security.analyzer import Assessment, analyze_browse
from workbench.tools.base import ParseOptions, RuleSubject, Tool

if TYPE_CHECKING:
    from workbench.exit_codes import Status


class BrowserTool(Tool[BrowseAction, BrowseObservation]):
    """The browser: each action answers with the page's text, its accessibility tree and a
    screenshot; downloads land in the workspace."""

    name = "browser"
    description = (
        "Drive a web browser with BrowserGym action strings and get back the page's text, its "
        "accessibility tree (elements carry ids called bid) and a screenshot. Examples: "
        '`goto("http://127.0.0.1:8000")`, `click("12")`, `fill("7", "hello")`, '
        "`scroll(0, 400)`, `go_back()`. Downloads land in the workspace."
    )
    parameters = {
        "code": {"type": "string", "description": "One or more BrowserGym actions, one a line."},
    }
    required = ("code",)
    action_kinds = ("browse",)
    rule_kind = "browse"
    changes_files = True
    prompt_line = "`browser`: drive a web browser with BrowserGym actions."
    executor = "browser"
    pane = "browser"

    def enabled(self, config: Any) -> bool:
        """`agent.enable_browser`."""
        return bool(config.agent.enable_browser)

    def parse(self, args: dict[str, Any], options: ParseOptions) -> BrowseAction:
        """One or more BrowserGym actions."""
        return BrowseAction(action=args["code"])

    def arguments(self, action: BrowseAction) -> dict[str, Any]:
        """The call's arguments."""
        return {"code": action.action}

    def observation_text(self, observation: BrowseObservation) -> str:
        """URL, title, text and accessibility tree; the screenshot file and any downloads."""
        obs = observation
        files = [f"[screenshot saved: {obs.screenshot_path}]"] if obs.screenshot_path else []
        files += [f"[downloaded: {path}]" for path in obs.downloads]
        files += [task_line(obs.task)] if obs.task else []
        if obs.error:
            return "\n".join([f"[browser error] {obs.error}\nURL: {obs.url}", *files])
        text = (
            f"URL: {obs.url}\nTitle: {obs.title}\n\n{obs.content}\n\n"
            f"Accessibility tree:\n{obs.axtree}"
        )
        return "\n".join([text, *files]) if files else text

    def human_text(self, observation: BrowseObservation, files: Path | None = None) -> str:
        """The page's URL and title (or the error), the screenshot by the path it was kept at,
        any downloads; the page text and accessibility tree are for the model."""
        obs = observation
        lines = [f"[browser error] {obs.error}" if obs.error else f"{obs.title}".strip()]
        lines.append(f"URL: {obs.url}")
        if obs.screenshot:
            kept = files / obs.screenshot if files else obs.screenshot_path or obs.screenshot
            lines.append(f"[screenshot: {kept}]")
        lines += [f"[downloaded: {path}]" for path in obs.downloads]
        lines += [task_line(obs.task)] if obs.task else []
        return "\n".join(line for line in lines if line)

    def ends_run_after(self, observation: Any) -> tuple[Status, str] | None:
        """An evaluation task that ended its episode ends the run: `success` when it scored
        above 0, else `gave_up` (the verifier reads the score itself)."""
        task = getattr(observation, "task", None)
        if not isinstance(task, BrowseTaskState) or not task.done:
            return None
        why = f"the task '{task.task_id}' ended its episode (best reward {task.best_reward:g})"
        return ("success" if task.best_reward > 0 else "gave_up"), why

    def failed(self, observation: BrowseObservation) -> bool:
        """The browser reported an error."""
        return bool(observation.error)

    def files(self, observation: BrowseObservation) -> list[str]:
        """The screenshot."""
        return [observation.screenshot] if observation.screenshot else []

    def rule_subject(self, action: BrowseAction) -> RuleSubject:
        """`browse:` rules match the action string."""
        return RuleSubject(self.rule_kind, action.action)

    def assess(self, action: BrowseAction, workspace: str) -> Assessment:
        """A `file:` URL outside the workspace reads local files: HIGH."""
        return analyze_browse(action.action, workspace)

    def describe(self, action: BrowseAction) -> str:
        """`browse ACTION`."""
        return f"browse {action.action}"

    def action_cell(self, key: str, action: BrowseAction) -> Cell:
        """The action string."""
        return Cell(key, "action", "@", action.action)

    def observation_cell(self, key: str, observation: BrowseObservation) -> Cell:
        """The page's title and URL, or the error."""
        obs = observation
        if obs.error:
            return Cell(key, "error", "@", f"{obs.action}: {first_line(obs.error)}", obs.error)
        title = f"{obs.title or obs.url} {obs.url}".strip()
        shot = " · screenshot" if obs.screenshot else ""
        summary = f"✓ {obs.title} · {obs.url}" if obs.title else f"✓ {obs.url}"
        if obs.task:
            shot += f" · reward {obs.task.reward:g}" + (" · task done" if obs.task.done else "")
        return Cell(key, "observation", "@", title, obs.content, "text", summary=summary + shot)


def task_line(task: BrowseTaskState) -> str:
    """The evaluation task's word on a step: its reward, its message, whether it is over."""
    said = f" The task says: {task.message}" if task.message else ""
    if task.done:
        return (
            f"[task {task.task_id}: reward {task.reward:g} for this step.{said} The task is "
            f"complete: its episode is over (score {task.best_reward:g}). Call finish now.]"
        )
    return f"[task {task.task_id}: reward {task.reward:g} for this step; not done yet.{said}]"
