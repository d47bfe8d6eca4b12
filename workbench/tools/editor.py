"""`str_replace_editor`: view, create and edit text files in the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox.protocol import FileEditAction, FileEditObservation
from workbench.display import Cell, diff_counts, lexer_for_path
from workbench.security.analyzer import Assessment, analyze_path_edit
from workbench.tools.base import ParseOptions, RuleSubject, Tool, ToolCallError

COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")
_NEEDS = {
    "create": ("file_text",),
    "str_replace": ("old_str",),
    "insert": ("insert_line", "new_str"),
}
_FIELDS = ("file_text", "old_str", "new_str", "insert_line", "view_range")
MAX_LINE = 1_000_000_000
"""The largest line number taken (the sandbox cannot index past 2**63; no file is that long)."""


class EditorTool(Tool[FileEditAction, FileEditObservation]):
    """The file editor: every change comes back as a unified diff and can be undone."""

    name = "str_replace_editor"
    description = (
        "View, create and edit text files in the sandbox. Paths must be absolute.\n"
        "* `view`: a file with line numbers (optionally only `view_range`), or a directory two "
        "levels deep without hidden entries.\n"
        "* `create`: a new file with `file_text`; an existing file is never overwritten.\n"
        "* `str_replace`: replace `old_str` with `new_str`. `old_str` must match exactly one "
        "place in the file, whitespace included; include a few lines of context to make it "
        "unique.\n"
        "* `insert`: put `new_str` after line `insert_line` (0 inserts at the top).\n"
        "* `undo_edit`: take back the last change made to the file.\n"
        "Binary files and very large files are refused; a file keeps its encoding."
    )
    parameters = {
        "command": {"type": "string", "enum": list(COMMANDS), "description": "What to do."},
        "path": {"type": "string", "description": "Absolute path of the file or directory."},
        "file_text": {"type": "string", "description": "Content of the new file (create)."},
        "old_str": {"type": "string", "description": "The exact text to replace (str_replace)."},
        "new_str": {
            "type": "string",
            "description": "The replacement (str_replace; empty deletes) or the text to insert.",
        },
        "insert_line": {
            "type": "integer",
            "description": "The line after which `new_str` goes (insert).",
        },
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "[first, last] lines to show (view; 1-based, last -1 = to the end).",
        },
    }
    required = ("command", "path")
    action_kinds = ("edit",)
    rule_kind = "edit"
    changes_files = True
    prompt_line = "`str_replace_editor`: view, create and edit files (absolute paths)."
    executor = "files"

    def parse(self, args: dict[str, Any], options: ParseOptions) -> FileEditAction:
        """One editor command with the arguments it needs."""
        command = args["command"]
        missing = [k for k in _NEEDS.get(command, ()) if k not in args]
        if missing:
            raise ToolCallError(
                f"str_replace_editor {command} needs {' and '.join(repr(k) for k in missing)}."
            )
        view_range = args.get("view_range")
        if view_range is not None and len(view_range) != 2:
            raise ToolCallError(
                f"argument 'view_range' of str_replace_editor must be [first, last]; "
                f"got {json.dumps(view_range)}."
            )
        lines = [args.get("insert_line", 0), *(view_range or ())]
        if any(abs(line) > MAX_LINE for line in lines):
            raise ToolCallError(
                f"line numbers of str_replace_editor are at most {MAX_LINE}; got "
                f"{max(lines, key=abs)}."
            )
        return FileEditAction(
            command=command, path=args["path"], **{k: args[k] for k in _FIELDS if k in args}
        )

    def arguments(self, action: FileEditAction) -> dict[str, Any]:
        """The call's arguments."""
        return action.model_dump(exclude={"kind"}, exclude_none=True)

    def rule_subject(self, action: FileEditAction) -> RuleSubject:
        """`edit:` rules match the path."""
        return RuleSubject(self.rule_kind, action.path)

    def assess(self, action: FileEditAction, workspace: str) -> Assessment:
        """Changing a file outside the workspace (or one that runs code later) is HIGH;
        viewing is LOW."""
        if action.command == "view":
            return Assessment("LOW")
        return analyze_path_edit(action.path, workspace)

    def describe(self, action: FileEditAction) -> str:
        """`edit COMMAND PATH`."""
        return f"edit {action.command} {action.path}"

    def human_text(self, observation: FileEditObservation, files: Path | None = None) -> str:
        """A change prints its diff; a view, what was viewed."""
        return observation.diff or observation.content

    def action_cell(self, key: str, action: FileEditAction) -> Cell:
        """The new file, the replacement as a diff, or the inserted text."""
        act = action
        title = f"{act.command} {act.path}"
        if act.command == "create" and act.file_text is not None:
            return Cell(key, "action", "✎", title, act.file_text, "code", lexer_for_path(act.path))
        if act.command == "str_replace":
            old = "".join(f"-{line}\n" for line in (act.old_str or "").splitlines())
            new = "".join(f"+{line}\n" for line in (act.new_str or "").splitlines())
            return Cell(key, "action", "✎", title, old + new, "code", "diff")
        if act.command == "insert":
            body = f"after line {act.insert_line}:\n{act.new_str or ''}"
            return Cell(key, "action", "✎", title, body, "text")
        return Cell(key, "action", "✎", title)

    def observation_cell(self, key: str, observation: FileEditObservation) -> Cell:
        """The diff of a change, or what was viewed."""
        obs = observation
        title = f"{obs.command} {obs.path}"
        if obs.diff:
            added, removed = diff_counts(obs.diff)
            counts = f"+{added} −{removed}"  # noqa: RUF001
            return Cell(
                key,
                "observation",
                "✓",
                f"{title} · {counts}",
                obs.diff,
                "code",
                "diff",
                summary=counts,
            )
        lines = len(obs.content.splitlines())
        summary = f"✓ {lines} line{'s' if lines != 1 else ''}" if obs.command == "view" else "✓"
        return Cell(key, "observation", "✓", title, obs.content, "text", summary=summary)

    def result_cell(self, cell: Cell, action: FileEditAction, outcome: Cell) -> Cell:
        """One row: the command and path, `+N −M`; on expand the diff (which says what the
        replacement did), else what the editor answered."""  # noqa: RUF002
        cell = super().result_cell(cell, action, outcome)
        if outcome.body_format == "code" and outcome.lexer == "diff":
            cell.body, cell.body_format, cell.lexer = outcome.body, "code", "diff"
            cell.more = ()
        elif action.command == "view":
            cell.body, cell.body_format, cell.more = outcome.body, "text", ()
        return cell
