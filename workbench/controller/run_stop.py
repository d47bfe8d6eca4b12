"""The exception that ends the agent loop with a status, raised from anywhere inside a step."""

from __future__ import annotations

from workbench.exit_codes import Status


class RunStop(Exception):
    """Ends the loop with a status (`exit_codes.Status`) and the reason a person reads."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
