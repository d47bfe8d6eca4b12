"""Asked when a command in the sandbox wants a host that is not on the network allowlist
(`sandbox.network = "allowlist"`): the connection waits meanwhile. o allows it once, s for this
session, a always (saves `net:HOST` to the config as "always allow" does), n or escape
refuses it (the command gets a 403 and the agent is told why)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from workbench.security.net_gate import NetAnswer, NetQuestion
from workbench.security.net_rules import host_rule


class NetAskScreen(ModalScreen[NetAnswer]):
    """May the sandbox reach this host? o once, s this session, a always, n refuse."""

    DEFAULT_CSS = """
    NetAskScreen { align: center middle; }
    #net-ask {
        width: 84; max-width: 95%; height: auto;
        border: round $warning; background: $surface; padding: 0 1;
    }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "dismiss('once')", "Allow once"),
        Binding("s", "dismiss('session')", "This session"),
        Binding("a", "dismiss('always')", "Always"),
        Binding("n,escape", "dismiss('reject')", "Refuse"),
    ]

    def __init__(self, question: NetQuestion) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        """The host, the command that asked, and the keys."""
        q = self.question
        tool = q.action.tool_name if q.action is not None else "a process in the sandbox"
        command = q.command if len(q.command) <= 300 else q.command[:300] + "…"
        with Vertical(id="net-ask"):
            yield Static(
                Text.assemble(
                    ("The sandbox wants to reach ", "bold"),
                    (f"{q.host}:{q.port}", "bold reverse"),
                    "\nnot on the network allowlist; the connection waits for your answer.\n",
                    ("Asked by ", "dim"),
                    (tool, "bold"),
                    (f": {command}" if command else "", ""),
                    "\n\n",
                    ("o", "bold"),
                    " allow once   ",
                    ("s", "bold"),
                    " for this session   ",
                    ("a", "bold"),
                    f" always (saves {host_rule(q.host)})   ",
                    ("n", "bold"),
                    " refuse",
                ),
                id="net-ask-text",
            )
