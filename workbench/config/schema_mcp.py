"""The `[mcp]` section: the MCP servers a session starts, each a command or an HTTP URL.

Part of the schema (`schema.py` puts the sections together); the docstrings are the docs.
"""

from __future__ import annotations

import re

from pydantic import (
    Field,
    field_validator,
    model_validator,
)

from workbench.config.section import Section

_MCP_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")


class McpServerConfig(Section):
    """`[mcp.servers.NAME]`: one MCP server, started inside the sandbox: a command over stdio
    (`command`, `env`), or a URL (streamable HTTP, `headers`)."""

    command: list[str] = Field(default_factory=list)
    """The program and its arguments, as run inside the sandbox (e.g. ["npx", "-y", "pkg"])."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables for that process only (not the agent's shell); masked in logs."""
    url: str = ""
    """The server's streamable-HTTP endpoint, reached from inside the sandbox."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a URL server (e.g. Authorization); masked in logs."""
    start_timeout_s: float = Field(default=30.0, gt=0, le=600, allow_inf_nan=False)
    """Seconds starting the server and listing its tools may take."""
    read_only: list[str] = Field(default_factory=list)
    """Host files and folders a stdio server may read besides its program and scripts (which
    are made visible by themselves); a relative path is from the config file's folder."""
    writable: list[str] = Field(default_factory=list)
    """Host folders a stdio server may write (its own data); visible to it alone."""
    sandbox: bool = True
    """false: a trusted stdio server runs on the host as you, outside the sandbox."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
        return value

    @field_validator("read_only", "writable")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        if any(not path.strip() for path in value):
            raise ValueError("an empty path names nothing: give each file or folder's path")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        command, env, url, headers = self.command, self.env, self.url, self.headers
        if command and url:
            raise ValueError("give either command (a stdio server) or url, not both")
        if not command and not url:
            raise ValueError('give command = ["program", "arg", ...] (stdio) or url = "http..."')
        if env and not command:
            raise ValueError("env is for a stdio server (command); a URL server takes headers")
        if headers and not url:
            raise ValueError("headers are for a URL server (url); a stdio server takes env")
        if (self.read_only or self.writable or not self.sandbox) and not command:
            raise ValueError(
                "read_only, writable and sandbox are for a stdio server (command); "
                "a URL server runs elsewhere"
            )
        return self


class McpConfig(Section):
    """`[mcp]`: MCP servers whose tools the agent is offered as `mcp__SERVER__TOOL`."""

    servers: dict[str, McpServerConfig] = Field(
        default_factory=dict,
        json_schema_extra={
            "allowed": 'tables [mcp.servers.NAME] with command = [...] (and env) or url = "..."'
        },
    )
    """The servers by name (letters, digits, "-" and single "_"). Each [mcp.servers.NAME] has
    either a `command = ["program", "arg", ...]` and `env = {VAR = "value"}` (stdio; env
    reaches that process only), or a `url = "https://..."` and `headers = {Authorization =
    "..."}` (streamable HTTP); and `start_timeout_s` (30). Both are reached from inside the
    sandbox; env and header values are masked in logs. A stdio server may add
    `read_only = [...]` and `writable = [...]` (host paths only it sees) or `sandbox = false`
    (a trusted server run on the host). Relative paths start from this file's folder."""
    lazy_above: int = Field(default=30, ge=0)
    """With more MCP tools than this, the model gets one tool, `mcp`, that lists, describes and
    calls them, instead of every tool's schema in each request."""
    call_timeout_s: float = Field(default=300.0, gt=0, le=86_400, allow_inf_nan=False)
    """Seconds one MCP tool call may take; then the agent gets an error result."""

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            if not _MCP_NAME.match(name) or len(name) > 32:
                raise ValueError(
                    f"server name {name!r}: use at most 32 letters, digits, '-' and single '_' "
                    "(tools are named mcp__SERVER__TOOL)"
                )
        return value
