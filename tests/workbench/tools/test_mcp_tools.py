"""MCP tools on the app's side: names, schemas, rules and risk, config errors, and a sandbox
that cannot start MCP servers (the session goes on without them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandbox.runtimes.local import LocalRuntime
from workbench.config.load import ConfigError, load_config
from workbench.config.schema import Config, SecurityConfig
from workbench.events import ToolCallAction
from workbench.security.policy import check
from workbench.tools.function import FunctionTool
from workbench.tools.mcp import (
    MCP_CATALOG,
    McpConnection,
    McpTool,
    connect_mcp,
    parameters_of,
    tool_name,
)
from workbench.tools.registry import ToolRegistry, builtin_tools


def test_tool_names_are_valid_function_names() -> None:
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    odd = tool_name("fs", "read.file/v2 (beta)")
    assert odd == "mcp__fs__read_file_v2__beta_"
    long = tool_name("srv", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__srv__xxx")
    assert tool_name("srv", "x" * 100) != tool_name("srv", "x" * 101)  # a hash tells them apart
    taken = {"mcp__a__b_c"}
    assert tool_name("a", "b.c", taken) != "mcp__a__b_c"


def test_parameters_always_have_properties_and_required() -> None:
    assert parameters_of({}) == {"type": "object", "properties": {}, "required": []}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "$defs": {"X": {}}}
    params = parameters_of(schema)
    assert params["properties"] == {"a": {"type": "integer"}} and params["$defs"] == {"X": {}}
    assert params["required"] == []


def make_tool(registry: ToolRegistry, server: str = "demo", tool: str = "add") -> McpTool:
    connection = McpConnection(Config().mcp, registry)
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    return McpTool(connection, server, tool, "Add.", schema, tool_name(server, tool))


def test_mcp_tools_share_the_mcp_rule_kind_and_no_other_tool_may_take_it() -> None:
    registry = ToolRegistry(builtin_tools())
    registry.register(make_tool(registry, tool="add"))
    registry.register(make_tool(registry, tool="sub"))
    assert "mcp" in registry.rule_kinds()
    plain = FunctionTool("y", "a run-time tool that is not an MCP tool", {}, ())
    plain.rule_kind = "mcp"
    with pytest.raises(ValueError, match="'mcp'"):
        registry.register(plain)


@pytest.mark.parametrize(
    ("rules", "asked", "decided"),
    [
        ({}, False, None),
        ({"deny": ["mcp:demo.*"]}, False, "reject"),
        ({"ask": ["mcp:demo.add"]}, True, None),
        ({"ask": ["mcp:other.*"]}, False, None),
        ({"confirmation": "risky", "risk_threshold": "MEDIUM"}, True, None),
        (
            {"confirmation": "risky", "risk_threshold": "MEDIUM", "allow": ["mcp:demo.add"]},
            False,
            "approve",
        ),
    ],
)
def test_calls_are_medium_and_rules_match_server_dot_tool(
    rules: dict[str, Any], asked: bool, decided: str | None
) -> None:
    from workbench.tools.registry import REGISTRY

    with REGISTRY.registered(make_tool(REGISTRY)) as tool:
        action = ToolCallAction(tool=tool.name, arguments={"a": 1})
        verdict = check(action, None, SecurityConfig(**rules), "/ws")
    assert verdict.risk == "MEDIUM"
    assert verdict.needs_confirmation is asked
    assert (verdict.decision.verdict if verdict.decision else None) == decided


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('command = ["x"]\nurl = "http://h/mcp"', "mcp.servers.s: give either command"),
        ('env = {A = "1"}', "mcp.servers.s: give command"),
        ('command = ["x"]\nheaders = {A = "1"}', "headers are for a URL server"),
        ('url = "ftp://h"', "mcp.servers.s.url: must be an http:// or https:// URL"),
        ('command = "npx server"', "mcp.servers.s.command: Input should be a valid list"),
        ('comand = ["x"]', "mcp.servers.s.comand: Extra inputs are not permitted"),
    ],
)
def test_bad_server_tables_are_refused_naming_the_server(
    tmp_path: Path, toml: str, says: str
) -> None:
    file = tmp_path / "c.toml"
    file.write_text(f"[mcp.servers.s]\n{toml}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(file, env={})
    assert says in str(caught.value) and str(file) in str(caught.value)


def test_a_server_name_that_cannot_make_tool_names_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "c.toml"
    file.write_text('[mcp.servers."a__b"]\ncommand = ["x"]\n')
    with pytest.raises(ConfigError, match="server name 'a__b'"):
        load_config(file, env={})


def test_env_and_header_values_are_masked_in_the_recorded_config(tmp_path: Path) -> None:
    file = tmp_path / "c.toml"
    file.write_text(
        '[mcp.servers.a]\ncommand = ["x"]\nenv = {TOKEN = "tok-123456"}\n'
        '[mcp.servers.b]\nurl = "https://h/mcp"\nheaders = {Authorization = "Bearer zzz999"}\n'
    )
    config = load_config(file, env={})
    recorded = str(config.redacted_dict())
    assert "tok-123456" not in recorded and "zzz999" not in recorded
    from workbench.session.opening import secrets_of

    assert {"tok-123456", "Bearer zzz999"} <= set(secrets_of(config))


async def test_a_sandbox_without_mcp_gives_notices_and_no_tools(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    config = Config.model_validate({"mcp": {"servers": {"demo": {"command": ["x"]}}}})
    runtime = LocalRuntime(tmp_path / "ws", disable=["browser", "jupyter", "mcp"], warm_up=False)
    await runtime.start()
    registry = ToolRegistry(builtin_tools())
    try:
        connection = await connect_mcp(config, runtime, registry)
    finally:
        await runtime.close()
    assert connection.tools == {} and not MCP_CATALOG.enabled(config)
    (failure,) = connection.failures
    assert "'demo' did not start" in failure and "disabled" in failure
    assert "session goes on" in failure


def test_policy_check_judges_an_mcp_tool_by_server_and_tool(tmp_path: Path) -> None:
    from workbench.cli.policy import check_call

    file = tmp_path / "c.toml"
    file.write_text('[security]\ndeny = ["mcp:github.delete_*"]\nask = ["mcp:github.*"]\n')
    config = load_config(file, env={})
    arguments = {"operation": "call", "tool": "mcp__github__delete_repo"}
    denied = check_call(config, "mcp", arguments)
    assert (denied.risk, denied.decision, denied.rule) == (
        "MEDIUM",
        "reject",
        "deny:mcp:github.delete_*",
    )
    asked = check_call(config, "mcp", {**arguments, "tool": "mcp__github__list_issues"})
    assert (asked.decision, asked.rule) == ("ask", "ask:mcp:github.*")
    other = check_call(config, "mcp", {**arguments, "tool": "mcp__fs__read"})
    assert other.decision == "run"
    listing = check_call(config, "mcp", {"operation": "list"})
    assert (listing.risk, listing.decision) == ("LOW", "run")
