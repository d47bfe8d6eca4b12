"""The tool registry: what the rest of the app asks about tools, keyed by tool name and by the
kind of action or observation. `REGISTRY` holds the built-in tools; more can be registered at
run time (`register`), and the controller offers whichever are enabled when it starts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from workbench.tools.base import Tool
from workbench.tools.bash import BashTool
from workbench.tools.browser import BrowserTool
from workbench.tools.editor import EditorTool
from workbench.tools.finish import FinishTool
from workbench.tools.function import UnregisteredTool
from workbench.tools.host_run import HostRunTool
from workbench.tools.ipython import IPythonTool
from workbench.tools.mcp import MCP_CATALOG
from workbench.tools.results import SharedResults
from workbench.tools.set_env import SetEnvTool
from workbench.tools.think import ThinkTool

if TYPE_CHECKING:
    from workbench.config.schema import Config

AnyTool = Tool[Any, Any]
T = TypeVar("T", bound=AnyTool)
_RUN_TIME_KINDS = ("tool_call", "tool_result")


class ToolRegistry:
    """Tools by name and by action kind, in the order they are offered."""

    def __init__(self, tools: Iterable[AnyTool] = ()) -> None:
        self._tools: list[AnyTool] = []
        self._by_name: dict[str, AnyTool] = {}
        self._by_kind: dict[str, AnyTool] = {}
        self._shared = SharedResults()
        for tool in tools:
            self.register(tool, before=None)

    def register(self, tool: AnyTool, *, before: str | None = "think") -> None:
        """Add `tool`, offered before the tool named `before` (by default think and finish
        stay last; None: at the end)."""
        if tool.name and tool.name in self._by_name:
            raise ValueError(f"a tool named {tool.name!r} is registered already")
        rule_kind = tool.rule_kind or tool.name
        shared = tool.shares_rule_kind and all(
            t.shares_rule_kind for t in self._tools if (t.rule_kind or t.name) == rule_kind
        )
        if rule_kind and rule_kind in self.rule_kinds() and not shared:
            raise ValueError(f"allow and deny rules say {rule_kind!r} for another tool already")
        kinds = [kind for kind in tool.action_kinds if kind not in _RUN_TIME_KINDS]
        taken = [kind for kind in kinds if kind in self._by_kind]
        if taken:
            raise ValueError(f"action kind {taken[0]!r} belongs to another tool already")
        names = [t.name for t in self._tools]
        at = names.index(before) if before in names else len(self._tools)
        self._tools.insert(at, tool)
        if tool.name:
            self._by_name[tool.name] = tool
        for kind in kinds:
            self._by_kind[kind] = tool

    def unregister(self, name: str) -> None:
        """Remove the tool named `name` (no error if there is none)."""
        tool = self._by_name.pop(name, None)
        if tool is None:
            return
        self._tools.remove(tool)
        for kind in tool.action_kinds:
            if self._by_kind.get(kind) is tool:
                del self._by_kind[kind]

    @contextmanager
    def registered(self, tool: T, *, before: str | None = "think") -> Iterator[T]:
        """`tool` registered for the length of a `with` block (a test's, a connection's)."""
        self.register(tool, before=before)
        try:
            yield tool
        finally:
            self.unregister(tool.name)

    def get(self, name: str) -> AnyTool | None:
        """The tool named `name`, if registered."""
        return self._by_name.get(name)

    def tools(self) -> list[AnyTool]:
        """Every registered tool, in offering order."""
        return list(self._tools)

    def callable(self) -> list[AnyTool]:
        """Every tool a model can call, whatever the config offers (not `set_env`)."""
        return [tool for tool in self._tools if tool.name]

    def offered(self, config: Config, executors: Mapping[str, bool] | None = None) -> list[AnyTool]:
        """The tools to offer: enabled in `config`, and runnable by a sandbox whose executors
        are `executors` (a Docker image has no browser, for one)."""
        can = executors or {}
        return [
            tool
            for tool in self.callable()
            if tool.enabled(config) and (tool.executor is None or can.get(tool.executor, True))
        ]

    def for_action(self, action: Any) -> AnyTool:
        """The tool that made `action`."""
        if action.kind == "tool_call":
            return self._by_name.get(action.tool) or UnregisteredTool(action.tool)
        tool = self._by_kind.get(action.kind)
        if tool is None:
            raise LookupError(f"no tool makes actions of kind {action.kind!r}")
        return tool

    def for_observation(self, observation: Any) -> AnyTool:
        """The tool that words and shows `observation` (errors and refusals: shared)."""
        if observation.kind == "tool_result":
            return self._by_name.get(observation.tool) or UnregisteredTool(observation.tool)
        if observation.kind in self._shared.action_kinds:
            return self._shared
        tool = self._by_kind.get(observation.kind)
        if tool is None:
            raise LookupError(f"no tool answers with observations of kind {observation.kind!r}")
        return tool

    def shell_rule_kinds(self) -> set[str]:
        """The rule kinds whose text is a shell line (`run`)."""
        return {tool.rule_kind for tool in self._tools if tool.rule_text_is_shell}

    def rule_kinds(self) -> set[str]:
        """The `kind:` prefixes allow and deny rules may use (`net:` names hosts the sandbox
        may reach: `workbench/security/net_rules.py`; no action matches it)."""
        kinds = {tool.rule_kind or tool.name for tool in self._tools if tool.rule_kind or tool.name}
        return kinds | {"net"}


def builtin_tools() -> list[AnyTool]:
    """The built-in tools, in the order they are offered."""
    return [
        BashTool(),
        EditorTool(),
        IPythonTool(),
        BrowserTool(),
        MCP_CATALOG,
        SetEnvTool(),
        HostRunTool(),
        ThinkTool(),
        FinishTool(),
    ]


REGISTRY = ToolRegistry(builtin_tools())
"""The registry the app uses."""


def schemas(tools: Iterable[AnyTool]) -> list[dict[str, Any]]:
    """The function schemas of `tools`, for the LLM."""
    return [tool.schema() for tool in tools]
