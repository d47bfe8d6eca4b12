"""The errors a runtime or its client raise when the sandbox cannot be reached or used."""

from __future__ import annotations


class SandboxError(Exception):
    """The sandbox could not be reached, started or restarted."""


class SandboxConnectionError(SandboxError):
    """The server did not answer; `sent` tells whether the request may have reached it."""

    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class SandboxRequestError(SandboxError):
    """The server refused a request (HTTP 4xx/5xx); the message is the server's."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message
