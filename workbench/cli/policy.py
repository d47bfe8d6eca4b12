"""`workbench policy`: what the confirmation policy would do, without running anything.

`workbench policy check [--json] "CMD"` (or `--tool str_replace_editor --path P`, `--code CODE`
for IPython, `--tool browser --code ACTION`, `--tool mcp__SERVER__TOOL`) parses the call as the
model's would be parsed and prints the risk, each reason, the rule that decided and the decision
under the current config: `run` (no one is asked), `ask` (a person is asked; headless answers
with `--on-confirm`) or `reject` (a deny rule). `workbench policy rules [--json]` lists the
allow, ask and deny rules in effect and where each comes from (config file and line,
environment variable, or flag), and an untrusted project config's allow rules as `untrusted
allow` (not applied). `workbench policy trust [--workspace DIR]` prints the project config's
rules and trusts its content as read; `untrust` forgets that (`workbench.config.project_trust`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench import exit_codes
from workbench.safe_text import terminal_safe

RULE_KINDS = ("allow", "ask", "deny")


@dataclass(frozen=True)
class Verdict:
    """What the policy says about one call, for people and for scripts."""

    tool: str
    risk: str
    reasons: list[str]
    rule: str
    decision: str
    """`run`, `ask` or `reject`."""
    headless: str | None
    """What headless does when it would ask (`--on-confirm`); None when nobody is asked."""


@dataclass(frozen=True)
class RuleSource:
    """One allow or deny rule and where it was set."""

    kind: str
    rule: str
    source: str
    line: int | None = None


def build_parser() -> argparse.ArgumentParser:
    """The parser of `workbench policy`."""
    parser = argparse.ArgumentParser(
        prog="workbench policy", description="What the confirmation policy would do."
    )
    sub = parser.add_subparsers(dest="what", required=True)
    check = sub.add_parser("check", help="judge one call without running it")
    check.add_argument("command", nargs="?", help="a shell command line (execute_bash)")
    check.add_argument(
        "--tool",
        help="the tool (default: execute_bash, or by --path/--code); mcp__SERVER__TOOL for an MCP "
        "tool",
    )
    check.add_argument("--path", help="str_replace_editor: the file's path")
    check.add_argument(
        "--edit", default="create", help="str_replace_editor: its command (default: create)"
    )
    check.add_argument("--code", help="execute_ipython_cell: the code; browser: the action")
    check.add_argument(
        "--declared",
        choices=("LOW", "MEDIUM", "HIGH"),
        default="LOW",
        help="the risk the model declares (default: LOW; ours counts when higher)",
    )
    rules = sub.add_parser("rules", help="the allow and deny rules in effect, with their source")
    for each in (check, rules):
        each.add_argument("--json", action="store_true", help="print JSON")
        each.add_argument("--config", metavar="PATH", help="the config file to read")
        each.add_argument("--workspace", metavar="DIR", help="the workspace (default: here)")
    trust = sub.add_parser(
        "trust",
        help="trust the project's .workbench/config.toml as it is now (after reviewing it): "
        "its allow rules apply until it changes",
    )
    untrust = sub.add_parser("untrust", help="stop trusting the project's config")
    for each in (trust, untrust):
        each.add_argument("--workspace", metavar="DIR", help="the project (default: here)")
    return parser


def _call_arguments(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The tool and the arguments a model would send for what the flags describe."""
    tool = args.tool or (
        "str_replace_editor"
        if args.path
        else "execute_ipython_cell"
        if args.code is not None
        else "execute_bash"
    )
    if tool.startswith("mcp__"):  # an MCP tool, as the `mcp` tool would call it
        return "mcp", {"operation": "call", "tool": tool}
    if tool == "execute_bash":
        if args.command is None:
            raise ValueError("give the command line to check, e.g. `policy check 'rm -rf x'`")
        return tool, {"command": args.command}
    if tool == "str_replace_editor":
        if not args.path:
            raise ValueError("give the file with --path")
        arguments: dict[str, Any] = {"command": args.edit, "path": args.path}
        needs = {"create": "file_text", "str_replace": "old_str", "insert": "new_str"}
        if args.edit in needs:
            arguments[needs[args.edit]] = ""
        if args.edit == "insert":
            arguments["insert_line"] = 0
        return tool, arguments
    if args.code is None:
        raise ValueError(f"give the {tool} input with --code")
    return tool, {"code": args.code}


def check_call(
    config: Any, tool: str, arguments: dict[str, Any], declared: str | None = "LOW"
) -> Verdict:
    """Judge one call as the controller would, without running it."""
    from workbench.agent.parse import parse_tool_call
    from workbench.config.places import workspace_of
    from workbench.security.policy import check
    from workbench.tools.registry import REGISTRY

    if declared is not None:
        arguments = {**arguments, "security_risk": declared}
    parsed = parse_tool_call(tool, json.dumps(arguments), REGISTRY.callable())
    workspace = str(workspace_of(config))
    verdict = check(parsed.action, parsed.security_risk, config.security, workspace)
    reasons = list(verdict.reasons)
    decision = verdict.decision
    if decision is not None:
        outcome = "run" if decision.approved else "reject"
        return Verdict(tool, verdict.risk, reasons, decision.rule, outcome, None)
    if verdict.needs_confirmation:
        on_confirm = config.security.headless_on_confirm
        return Verdict(tool, verdict.risk, reasons, verdict.rule, "ask", on_confirm)
    return Verdict(tool, verdict.risk, reasons, verdict.rule, "run", None)


def rule_sources(config: Any, env: dict[str, str] | None = None) -> list[RuleSource]:
    """The allow, ask and deny rules in effect and where each was set."""
    from workbench.security.rule_sources import rules_in_effect

    rows = rules_in_effect(config, env, unknown="command line or defaults")
    return [
        RuleSource(
            row.kind,
            row.rule,
            str(row.path)
            if row.path
            else (f"environment {row.variable}" if row.variable else row.source),
            row.line,
        )
        for row in sorted(
            rows, key=lambda row: RULE_KINDS.index(row.kind) if row.kind in RULE_KINDS else 0
        )
        if row.kind != "policy"
    ]


def untrusted_rows(config: Any) -> list[RuleSource]:
    """The allow rules of an untrusted project config, listed but not applied."""
    from workbench.security.rule_sources import untrusted_rules

    return [
        RuleSource("untrusted allow", row.rule, str(row.path), row.line)
        for row in untrusted_rules(config)
    ]


def _print_untrusted(rows: list[RuleSource]) -> None:
    """The withheld rules, escaped (they come from a file nobody vouched for yet)."""
    from workbench.config.project_trust import TRUST_HINT, shown

    for row in rows:
        where = f"{row.source}:{row.line}" if row.line else row.source
        print(f"{row.kind} {shown(row.rule)}    ({shown(where)}; not applied)")
    print(f"Not applied until you trust the file's content: review it, then `{TRUST_HINT}`.")


def trust_command(what: str, workspace: str | None) -> int:
    """`policy trust`: show the project file's rules and trust its content as read;
    `policy untrust`: forget that trust."""
    from workbench.config.load import ConfigError, project_config_file, project_layer
    from workbench.config.project_trust import digest_of, record, shown, untrust

    folder = Path(workspace or ".").expanduser().resolve()
    path = project_config_file(folder)
    if what == "untrust":
        done = untrust(path)
        print(f"{shown(str(path))}: {'no longer trusted' if done else 'was not trusted'}")
        return exit_codes.SUCCESS
    try:
        raw = path.read_bytes()
    except OSError as exc:
        print(
            f"workbench policy: error: cannot read {shown(str(path))}: {exc.strerror}. Fix: "
            "give the project with --workspace DIR.",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    try:  # the same checks as a session's: only rules, valid TOML
        layer = project_layer(raw, path)
    except ConfigError as exc:
        print(f"workbench policy: error: {exc}", file=sys.stderr)
        return exit_codes.USAGE
    print(f"trusted {shown(str(path))} with these rules:")
    for kind in RULE_KINDS:
        for rule in layer.get(f"security.{kind}", []) or []:
            print(f"  {kind:5} {shown(str(rule))}")
    record(path, digest_of(raw))
    print("A change to the file asks again.")
    return exit_codes.SUCCESS


def _print_verdict(verdict: Verdict) -> None:
    print(terminal_safe(f"{verdict.tool}: risk {verdict.risk}"))
    for reason in verdict.reasons:
        print(terminal_safe(f"  - {reason}"))
    print(terminal_safe(f"rule: {verdict.rule}"))
    headless = f" (headless: {verdict.headless})" if verdict.headless else ""
    print(terminal_safe(f"decision: {verdict.decision}{headless}"))


def policy_command(argv: Sequence[str]) -> int:
    """`workbench policy ...`; returns the exit code (2 for usage and config errors)."""
    args = build_parser().parse_args(argv)
    if args.what in ("trust", "untrust"):
        return trust_command(args.what, args.workspace)
    from workbench.agent.parse import ToolCallError
    from workbench.config.load import ConfigError, load_config

    overrides = {"sandbox.workspace": args.workspace} if args.workspace else None
    try:
        config_path = Path(args.config).expanduser() if args.config else None
        if config_path is not None and not config_path.is_file():
            raise ConfigError(f"--config {args.config}: no such file", source="command line")
        config = load_config(config_path, overrides=overrides)
        if args.what == "rules":
            rows, waiting = rule_sources(config), untrusted_rows(config)
            if args.json:
                print(json.dumps([asdict(row) for row in rows + waiting]))
            for row in [] if args.json else rows:
                where = f"{row.source}:{row.line}" if row.line else row.source
                print(terminal_safe(f"{row.kind:5} {row.rule}    ({where})"))
            if waiting and not args.json:
                _print_untrusted(waiting)
            rows += waiting
            if not rows and not args.json:
                print("no allow or deny rules; `security.confirmation` decides alone")
            return exit_codes.SUCCESS
        tool, arguments = _call_arguments(args)
        verdict = check_call(config, tool, arguments, args.declared)
    except (ConfigError, ToolCallError, ValueError) as exc:
        print(terminal_safe(f"workbench policy: error: {exc}"), file=sys.stderr)
        return exit_codes.USAGE
    if args.json:
        print(json.dumps(asdict(verdict)))
    else:
        _print_verdict(verdict)
    return exit_codes.SUCCESS
