"""MCP tools: the tools of the configured MCP servers, offered to the model at run time.

`connect_mcp` asks the sandbox to start the servers of `[mcp.servers]` (the sandbox's `mcp`
executor runs them inside the sandbox) and registers one `McpTool` per tool they list, named
`mcp__SERVER__TOOL`, with the server's own JSON schema. With more tools than
`mcp.lazy_above`, none of them is offered; the model gets the one `mcp` tool instead
(`McpCatalogTool`), which lists and describes them on demand and calls them, so their schemas
do not fill every request.

Every call is matched by allow, ask and deny rules as `mcp:SERVER.TOOL` and rated MEDIUM.
A server that does not start, or stops during the session, is said once as an `ErrorEvent`
(kind `mcp`); its tools are withdrawn and the session goes on. A tool that fails answers
the agent with an error result. Where a stdio server runs (`mcp_paths.py`: its command resolved
from the config file's folder and the host's PATH, the host paths shown to it alone) is said
the same way before it starts: a path the sandbox hides, with the fix; a `sandbox = false`
server, started by this process (`mcp_host.py`), runs on the host, not sandboxed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from sandbox.errors import SandboxRequestError
from sandbox.protocol import (
    ErrorObservation,
    McpBind,
    McpCallAction,
    McpCallObservation,
    McpListAction,
    McpListObservation,
    McpServerSpec,
    McpServerState,
)
from workbench.display import Cell, first_line
from workbench.events import ToolCallAction, ToolResultObservation
from workbench.security.risk import Assessment
from workbench.tools.base import RuleSubject, ToolContext
from workbench.tools.function import FunctionTool
from workbench.tools.mcp_paths import plans_of, stage_of

if TYPE_CHECKING:
    from sandbox.runtimes.base import Runtime
    from workbench.config.schema import Config
    from workbench.config.schema_mcp import McpConfig
    from workbench.tools.mcp_host import HostServers

log = logging.getLogger(__name__)

RULE_KIND = "mcp"
HOST_NOTE = "on the host, not sandboxed"
"""How a `sandbox = false` server is named wherever it is shown."""
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64  # what OpenAI-style function names allow
_MEDIUM = Assessment("MEDIUM", ("an MCP tool can do whatever its server can",))


class Registry(Protocol):
    """The part of `tools.registry.Registry` this module uses (it imports this one)."""

    def register(self, tool: Any, *, before: str | None = "think") -> None:
        """Add `tool`."""
        ...

    def unregister(self, name: str) -> None:
        """Remove the tool named `name`."""
        ...

    def get(self, name: str) -> Any:
        """The tool named `name`, if any."""
        ...

    def tools(self) -> list[Any]:
        """Every registered tool."""
        ...


class Notices(Protocol):
    """Where MCP notices go (the controller's event hub) and the tools it offers."""

    tools: list[Any]
    tool_schemas: list[dict[str, Any]]

    def notice(self, kind: str, message: str) -> None:
        """Record and show `message` as an error event of `kind`."""
        ...


def tool_name(server: str, tool: str, taken: set[str] | None = None) -> str:
    """`mcp__SERVER__TOOL`, made a valid function name (at most 64 of `[A-Za-z0-9_-]`)."""
    name = f"mcp__{server}__{_NAME_OK.sub('_', tool)}"
    if len(name) > _MAX_NAME or (taken is not None and name in taken):
        digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:6]
        name = f"{name[: _MAX_NAME - 7]}_{digest}"
    return name


def parameters_of(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema as function parameters: an object with `properties` and
    `required` (which the call checks rely on), everything else kept."""
    params = dict(schema) if isinstance(schema, dict) else {}
    params["type"] = "object"
    properties = params.get("properties")
    params["properties"] = dict(properties) if isinstance(properties, dict) else {}
    required = params.get("required")
    params["required"] = (
        [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    )
    return params


class McpTool(FunctionTool):
    """One tool of one MCP server, offered as `mcp__SERVER__TOOL`."""

    rule_kind = RULE_KIND
    shares_rule_kind = True
    declares_risk = False

    def __init__(
        self,
        connection: McpConnection,
        server: str,
        tool: str,
        description: str,
        input_schema: dict[str, Any],
        name: str,
    ) -> None:
        self.connection = connection
        self.server = server
        self.tool = tool
        self.input_schema = parameters_of(input_schema)
        text = description.strip() or f"The {tool} tool of the MCP server {server}."
        super().__init__(
            name,
            f"{text}\n(MCP server {server!r}, tool {tool!r}.)",
            self.input_schema["properties"],
            tuple(self.input_schema["required"]),
        )

    def schema(self) -> dict[str, Any]:
        """The server's own JSON schema for the arguments."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    async def execute(self, action: ToolCallAction, context: ToolContext) -> ToolResultObservation:
        """Call the tool in the sandbox."""
        return await self.connection.call(self, dict(action.arguments), context.runtime, self.name)

    def rule_subject(self, action: ToolCallAction) -> RuleSubject:
        """`mcp:SERVER.TOOL`."""
        return RuleSubject(RULE_KIND, f"{self.server}.{self.tool}")

    def assess(self, action: ToolCallAction, workspace: str) -> Assessment:
        """MEDIUM: we cannot know what a server's tool does."""
        return _MEDIUM

    def describe(self, action: ToolCallAction) -> str:
        """`mcp SERVER.TOOL {arguments}`."""
        return f"mcp {self.server}.{self.tool} {json.dumps(action.arguments, ensure_ascii=False)}"

    def summary(self) -> str:
        """One line for the catalog's list."""
        return f"{self.name}: {first_line(self.description, 160)}"


class McpCatalogTool(FunctionTool):
    """`mcp`: lists, describes and calls the MCP tools when there are too many to offer."""

    name = RULE_KIND
    rule_kind = RULE_KIND
    shares_rule_kind = True
    declares_risk = False
    description = (
        "Use the tools of the MCP servers of this session. operation=list: their names and "
        "what they do (filter with query); operation=describe: one tool's description and "
        "JSON schema of its arguments; operation=call: run one tool with arguments."
    )
    parameters = {
        "operation": {"type": "string", "enum": ["list", "describe", "call"]},
        "tool": {"type": "string", "description": "The tool, as list names it (mcp__S__T)."},
        "query": {"type": "string", "description": "list: only tools whose text has this."},
        "arguments": {"type": "object", "description": "call: the tool's arguments."},
    }
    required = ("operation",)
    prompt_line = "`mcp`: list, describe and call the tools of the session's MCP servers."

    def __init__(self) -> None:
        super().__init__()
        self.connection: McpConnection | None = None

    def enabled(self, config: Config) -> bool:
        """Offered when this session's MCP tools are too many to offer one by one."""
        return self.connection is not None and self.connection.lazy and bool(self.connection.tools)

    def _target(self, action: ToolCallAction) -> McpTool | None:
        tools = self.connection.tools if self.connection is not None else {}
        return tools.get(str(action.arguments.get("tool", "")))

    def rule_subject(self, action: ToolCallAction) -> RuleSubject | None:
        """A call is `mcp:SERVER.TOOL`; listing and describing run nothing."""
        if action.arguments.get("operation") != "call":
            return None
        target = self._target(action)
        if target is not None:
            return RuleSubject(RULE_KIND, f"{target.server}.{target.tool}")
        # Not one of this session's tools (or no session: `workbench policy check`): read
        # the name as mcp__SERVER__TOOL.
        name = str(action.arguments.get("tool", ""))
        server, sep, tool = name.removeprefix("mcp__").partition("__")
        return RuleSubject(RULE_KIND, f"{server}.{tool}" if sep and server else name)

    def assess(self, action: ToolCallAction, workspace: str) -> Assessment:
        """A call is MEDIUM, like any MCP tool."""
        return _MEDIUM if action.arguments.get("operation") == "call" else Assessment("LOW")

    async def execute(self, action: ToolCallAction, context: ToolContext) -> ToolResultObservation:
        """List, describe or call."""
        args = action.arguments
        operation = args.get("operation")
        tools = self.connection.tools if self.connection is not None else {}
        if operation == "list":
            query = str(args.get("query") or "").lower()
            lines = [t.summary() for t in tools.values() if query in t.summary().lower()]
            text = "\n".join(lines) or f"No MCP tool matches {query!r}."
            return ToolResultObservation(tool=self.name, content=text)
        target = self._target(action)
        if target is None:
            known = ", ".join(list(tools)[:50])
            text = f"There is no MCP tool {args.get('tool')!r}. The tools are: {known}."
            return ToolResultObservation(tool=self.name, content=text, error=True)
        if operation == "describe":
            schema = json.dumps(target.input_schema, indent=2, ensure_ascii=False)
            text = f"{target.name}\n{target.description}\nArguments (JSON schema):\n{schema}"
            return ToolResultObservation(tool=self.name, content=text)
        arguments = args.get("arguments") or {}
        assert self.connection is not None  # a target was found in it
        return await self.connection.call(target, dict(arguments), context.runtime, self.name)

    def describe(self, action: ToolCallAction) -> str:
        """`mcp call SERVER.TOOL {...}`, `mcp list`, `mcp describe TOOL`."""
        args = action.arguments
        rest = [str(args.get("tool") or args.get("query") or "")]
        if args.get("operation") == "call":
            rest.append(json.dumps(args.get("arguments") or {}, ensure_ascii=False))
        return " ".join(["mcp", str(args.get("operation")), *rest]).strip()

    def action_cell(self, key: str, action: ToolCallAction) -> Cell:
        """The operation and its tool, the arguments below."""
        body = json.dumps(action.arguments, indent=2, ensure_ascii=False)
        return Cell(key, "action", "⚙", first_line(self.describe(action)), body, "code", "json")


MCP_CATALOG = McpCatalogTool()
"""The one `mcp` tool, registered with the built-in tools (so `mcp:` rules always parse)."""


@dataclass
class McpConnection:
    """The MCP servers of one session: their tools, and the failures to report."""

    config: McpConfig
    registry: Registry
    tools: dict[str, McpTool] = field(default_factory=dict)
    """Every MCP tool of the session by its function name."""
    failures: list[str] = field(default_factory=list)
    """Sentences not yet reported: servers that did not start, and what was found before
    they started (a hidden path and its fix, a server on the host)."""
    lazy: bool = False
    hub: Notices | None = None
    failed: list[str] = field(default_factory=list)
    """The servers that did not start (the headless summary's `mcp_failed`)."""
    host: HostServers | None = None
    """The `sandbox = false` servers, run by this process."""

    def attach(self, hub: Notices) -> None:
        """Report the start-up failures through `hub` and withdraw tools from it later."""
        self.hub = hub
        for message in self.failures:
            hub.notice("mcp", message)
        self.failures.clear()

    async def call(
        self, target: McpTool, arguments: dict[str, Any], runtime: Runtime, name: str
    ) -> ToolResultObservation:
        """Call `target` in the sandbox; the answer is recorded under the tool `name`."""
        action = McpCallAction(
            server=target.server,
            tool=target.tool,
            arguments=arguments,
            timeout=self.config.call_timeout_s,
        )
        on_host = self.host is not None and not self.config.servers[target.server].sandbox
        place: Runtime | HostServers = self.host if on_host and self.host else runtime
        observation = await place.execute(action)
        if not isinstance(observation, McpCallObservation):
            text = getattr(observation, "content", f"unexpected answer {observation.kind!r}")
            return ToolResultObservation(tool=name, content=text, error=True)
        content = observation.content
        if observation.server_failed:
            self.withdraw(target.server, observation.server_failed)
            content += (
                f"\n[The MCP server {target.server!r} is gone; its tools are withdrawn for the "
                "rest of this session.]"
            )
        return ToolResultObservation(
            tool=name, content=content, error=observation.error, images=list(observation.images)
        )

    def withdraw(self, server: str, why: str) -> None:
        """Take the tools of `server` away (it stopped) and say so once."""
        names = [n for n, t in self.tools.items() if t.server == server]
        if not names:
            return
        for gone in names:
            del self.tools[gone]
            if self.registry.get(gone) is not None:
                self.registry.unregister(gone)
        message = f"{why}; its {len(names)} tool(s) are withdrawn and the session goes on"
        if self.hub is None:
            self.failures.append(message)
            return
        self.hub.tools = [t for t in self.hub.tools if t.name not in names]
        if not self.tools:  # nothing left for the catalog to offer
            self.hub.tools = [t for t in self.hub.tools if t is not MCP_CATALOG]
        self.hub.tool_schemas = [t.schema() for t in self.hub.tools]
        self.hub.notice("mcp", message)

    def close(self) -> None:
        """Unregister this session's MCP tools."""
        for name in list(self.tools):
            if isinstance(self.registry.get(name), McpTool):
                self.registry.unregister(name)
        self.tools.clear()
        if self.host is not None:
            self.host.close()
            self.host = None
        if MCP_CATALOG.connection is self:
            MCP_CATALOG.connection = None


_current: McpConnection | None = None


def specs_of(config: Config, workspace: Path | None = None) -> dict[str, McpServerSpec]:
    """What the sandbox (or this process, for `sandbox = false`) needs to start each server:
    its command resolved on the host, the host paths it alone sees (`mcp_paths.py`)."""
    workspace = workspace or Path(config.sandbox.workspace or os.getcwd()).expanduser().resolve()
    plans = plans_of(config, workspace)
    staged = config.sandbox.runtime == "local"
    remote = config.sandbox.runtime == "remote"
    specs: dict[str, McpServerSpec] = {}
    for name, server in config.mcp.servers.items():
        plan = plans.get(name)
        binds = []
        if plan is not None and staged and server.sandbox:
            binds = [
                McpBind(source=stage_of(path, writable), target=str(path), writable=writable)
                for path, writable in plan.mounts
            ]
        specs[name] = McpServerSpec(
            command=plan.command if plan else [],
            env=dict(server.env),
            url=server.url,
            headers=dict(server.headers),
            start_timeout=server.start_timeout_s,
            binds=binds,
            # A remote sandbox is another machine: this one's paths mean nothing there.
            host_paths=plan.host_paths if plan and server.sandbox and not remote else [],
            cache=bool(plan) and server.sandbox,
        )
    return specs


def _prepare(config: Config) -> tuple[Path, list[str], dict[str, McpServerSpec]]:
    """The workspace, what to say before starting, and the servers' specs (reads the disk)."""
    workspace = Path(config.sandbox.workspace or os.getcwd()).expanduser().resolve()
    return workspace, host_notes(config, workspace), specs_of(config, workspace)


def host_notes(config: Config, workspace: Path) -> list[str]:
    """What is known before any server starts: host problems, host servers, Docker's limits."""
    notes: list[str] = []
    for name, plan in plans_of(config, workspace).items():
        server = config.mcp.servers[name]
        notes += [f"the MCP server {name!r}: {note}" for note in plan.notes]
        if not server.sandbox:
            notes.append(f"the MCP server {name!r} runs {HOST_NOTE} (sandbox = false)")
        elif Path(server.command[0]).name in ("docker", "podman"):
            notes.append(
                f"the MCP server {name!r} runs {server.command[0]}, which needs its daemon's "
                "socket: the sandbox never shows it (it gives root on the host). Fix: set "
                "sandbox = false to run this trusted server on the host"
            )
        elif config.sandbox.runtime == "docker" and (server.read_only or server.writable):
            notes.append(
                f"the MCP server {name!r}: read_only and writable are not applied on the Docker "
                "runtime (its container is shared with the agent, which would see them too). "
                "Fix: set sandbox = false to run this trusted server on the host, or mount the "
                "folder for both with sandbox.volumes"
            )
    return notes


def close_mcp() -> None:
    """Withdraw the tools of the session's MCP connection (its session ended): the registry
    is the process's, and the next session, or the next test, must not see them."""
    global _current
    if _current is not None:
        _current.close()
        _current = None


async def connect_mcp(config: Config, runtime: Runtime, registry: Registry) -> McpConnection:
    """Start the configured MCP servers in the sandbox and register their tools (the tools of
    an earlier session's connection are withdrawn first). Failures are kept for `attach`."""
    global _current
    if _current is not None:
        _current.close()
    connection = McpConnection(config.mcp, registry)
    _current = connection
    MCP_CATALOG.connection = connection
    if not config.mcp.servers:
        return connection
    workspace, notes, specs = await asyncio.to_thread(_prepare, config)
    connection.failures += notes
    on_host = {n: s for n, s in specs.items() if not config.mcp.servers[n].sandbox}
    inside = {n: s for n, s in specs.items() if n not in on_host}
    if on_host:
        from workbench.tools.mcp_host import HostServers  # (loads the sandbox's executor)

        connection.host = HostServers(runtime, workspace)
    places = [(inside, runtime, False), (on_host, connection.host, True)]
    started = [_start(servers, where, host) for servers, where, host in places if servers and where]
    states = [state for part in await asyncio.gather(*started) for state in part]
    for state in states:
        if state.notice:
            connection.failures.append(state.notice)
        if state.error:
            connection.failed.append(state.name)
            connection.failures.append(f"{state.error}; the session goes on without it")
            continue
        for info in state.tools:
            name = tool_name(state.name, info.name, set(connection.tools) | _taken(registry))
            connection.tools[name] = McpTool(
                connection, state.name, info.name, info.description, info.input_schema, name
            )
    connection.lazy = len(connection.tools) > config.mcp.lazy_above
    if not connection.lazy:
        for tool in connection.tools.values():
            registry.register(tool)
    return connection


async def _start(
    servers: dict[str, McpServerSpec], where: Runtime | HostServers, on_host: bool
) -> list[McpServerState]:
    """Start `servers` in the sandbox or on the host; their states (failures when the place
    refused the request as a whole)."""
    try:
        observation: Any = await where.execute(McpListAction(servers=servers))
    except SandboxRequestError as exc:  # a sandbox server from before MCP (remote): say so
        observation = ErrorObservation(content=f"the sandbox server refused it ({exc})")
    except Exception as exc:  # the host's executor could not run it at all (a sandbox's
        if not on_host:  # trouble is the session's to report)
            raise
        from sandbox.executors.mcp import describe

        observation = ErrorObservation(content=describe(exc))
    if isinstance(observation, McpListObservation):
        return list(observation.servers)
    content = getattr(observation, "content", f"unexpected answer {observation.kind!r}")
    return [
        McpServerState(name=name, error=f"the MCP server {name!r} did not start: {content}")
        for name in servers
    ]


def _taken(registry: Registry) -> set[str]:
    return {tool.name for tool in registry.tools() if tool.name}
