"""A session's title: its own task, the first message the person sent in it.

A resumed or branched session's log starts with its parent's history (events up to the header's
`parent_event`); the parent's task is in that history, so the first user message of the log is
the root task, not this session's. Its own task is the first user message after the history.
A continued session the person has not written to yet is titled by the task it goes on with,
marked as such.
"""

from __future__ import annotations

import mmap
from typing import TYPE_CHECKING

from workbench.session.summaries import own_task

if TYPE_CHECKING:
    from workbench.session.log import SessionHeader
    from workbench.session.summaries import SessionSummary

_titles: dict[tuple[str, int, int], str] = {}
"""Own tasks of continued sessions already read, by log path, size and modification time."""


def continued_title(header: SessionHeader, own: str, inherited: str) -> str:
    """`own` task, or, for a continued session without one yet, the task it goes on with."""
    if own or not header.parent_id:
        return own
    return f"(continues {header.parent_id}) {inherited}" if inherited else ""


def session_title(summary: SessionSummary) -> str:
    """The title of a listed session (reads the log again only for a continued one whose
    summary does not hold its own task)."""
    header = summary.header
    if not header.parent_id or header.parent_event <= 0:
        return summary.task
    if summary.own_task is not None:  # read when it was summarized
        return continued_title(header, summary.own_task, summary.task)
    try:
        info = summary.path.stat()
        key = (str(summary.path), info.st_size, info.st_mtime_ns)
        if key not in _titles:  # the picker asks at every key press
            with summary.path.open("rb") as stream:
                if info.st_size == 0:
                    _titles[key] = ""
                else:
                    with mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) as data:
                        _titles[key] = own_task(data, header.parent_event)
        own = _titles[key]
    except OSError:
        own = ""
    return continued_title(header, own, summary.task)


def title_of_log(header: SessionHeader, tasks: list[tuple[int, str]]) -> str:
    """The title of a session already read: `tasks` are its user messages (id, text)."""
    own = next((text for number, text in tasks if number > header.parent_event), "")
    return continued_title(header, own, tasks[0][1] if tasks else "")
