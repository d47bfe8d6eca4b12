"""`execute_ipython_cell`: Python in the sandbox's persistent IPython kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sandbox.protocol import IPythonAction, IPythonObservation
from workbench.display import Cell, first_line, strip_ansi, telling_line
from workbench.security.analyzer import Assessment, analyze_python
from workbench.tools.base import ParseOptions, RuleSubject, Tool


def skills_text() -> str:
    """The documentation of the agent skills in the kernel, or "" when the sandbox has none."""
    try:
        from sandbox.skills import describe_skills  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return ""
    try:
        return str(describe_skills()).strip()
    except Exception:  # a broken skills module must not stop the agent from starting
        return ""


class IPythonTool(Tool[IPythonAction, IPythonObservation]):
    """The kernel: state kept between cells, images saved, cwd following the shell's."""

    name = "execute_ipython_cell"
    description = (
        "Run Python code in a persistent IPython kernel: variables and imports stay between "
        "calls. Its working directory follows the shell's. Magics work (`%pip install pkg`); "
        "the agent skills listed in the system prompt are already imported. Images you display "
        "are saved."
    )
    parameters = {
        "code": {"type": "string", "description": "The Python code of the cell."},
    }
    required = ("code",)
    action_kinds = ("ipython",)
    rule_kind = "ipython"
    changes_files = True
    prompt_line = "`execute_ipython_cell`: Python in a persistent IPython kernel."
    executor = "jupyter"
    pane = "jupyter"

    def __init__(self, skills: str | None = None) -> None:
        self._skills = skills

    def enabled(self, config: Any) -> bool:
        """`agent.enable_jupyter`."""
        return bool(config.agent.enable_jupyter)

    def prompt_extra(self) -> str:
        """The agent skills already imported in the kernel."""
        doc = skills_text() if self._skills is None else self._skills
        if not doc:
            return ""
        return (
            "Agent skills: these helper functions are already imported in the IPython kernel "
            "(call them with `execute_ipython_cell`):\n" + doc
        )

    def parse(self, args: dict[str, Any], options: ParseOptions) -> IPythonAction:
        """One cell."""
        return IPythonAction(code=args["code"])

    def arguments(self, action: IPythonAction) -> dict[str, Any]:
        """The call's arguments."""
        return {"code": action.code}

    def observation_text(self, observation: IPythonObservation) -> str:
        """Output, saved images, the note, then where the kernel is and which Python it runs."""
        obs = observation
        parts = [obs.content.rstrip("\n")]
        parts += [f"[image saved: {name}]" for name in obs.images]
        if obs.note:
            parts.append(f"[{obs.note}]")
        text = "\n".join(p for p in parts if p) or "[no output]"
        where = [
            f"[Jupyter current working directory: {obs.cwd}]" if obs.cwd else "",
            f"[Jupyter Python interpreter: {obs.python}]" if obs.python else "",
        ]
        return "\n".join([text, *(line for line in where if line)])

    def human_text(self, observation: IPythonObservation, files: Path | None = None) -> str:
        """Output, each image by the path it was kept at, and the note."""
        obs = observation
        parts = [obs.content.rstrip("\n")]
        parts += [f"[image: {files / name if files else name}]" for name in obs.images]
        parts += [f"[{obs.note}]"] if obs.note else []
        return "\n".join(part for part in parts if part) or "(no output)"

    def failed(self, observation: IPythonObservation) -> bool:
        """The cell raised."""
        return bool(observation.error)

    def files(self, observation: IPythonObservation) -> list[str]:
        """The images the cell displayed."""
        return list(observation.images)

    def rule_subject(self, action: IPythonAction) -> RuleSubject:
        """`ipython:` rules match the code."""
        return RuleSubject(self.rule_kind, action.code)

    def assess(self, action: IPythonAction, workspace: str) -> Assessment:
        """Shell escapes, installs, deleting files or running programs from Python."""
        return analyze_python(action.code, workspace)

    def describe(self, action: IPythonAction) -> str:
        """`>>> first line  (+N lines)`."""
        first, *rest = action.code.splitlines() or [""]
        return f">>> {first}" + (f"  (+{len(rest)} lines)" if rest else "")

    def action_cell(self, key: str, action: IPythonAction) -> Cell:
        """The code, highlighted as Python."""
        return Cell(key, "action", "In", first_line(action.code), action.code, "code", "python")

    def observation_cell(self, key: str, observation: IPythonObservation) -> Cell:
        """Titled by the first output line, or by the error for a failed cell."""
        obs = observation
        content = strip_ansi(obs.content)
        images = len(obs.images)
        extra = f" · {images} image{'s' if images > 1 else ''}" if images else ""
        if obs.error:  # a traceback ends with what went wrong: that is the title
            title = (telling_line(content) or "the cell failed") + extra
            return Cell(key, "error", "✗", title, content, "text", summary=f"✗ {title}")
        title = (first_line(content) or "(no output)") + extra
        lines = len(content.splitlines())
        summary = f"✓ {lines} line{'s' if lines != 1 else ''}{extra}" if lines else "✓ no output"
        if lines:
            summary += f" · {first_line(content, 80)}"
        elif images:
            summary = f"✓ {extra[3:]}"
        return Cell(key, "observation", "Out", title, content, "text", summary=summary)
