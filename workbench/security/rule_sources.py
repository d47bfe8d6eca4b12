"""The confirmation rules in effect and where each comes from, and removing one where it was set.

A rule comes from the person's config file, the project's `.workbench/config.toml` (each with
its line), an environment variable, or this session only (added by "always allow" when saving
failed, or on the command line); the policy itself (`confirmation`, `risk_threshold`) from a
file or the defaults. `remove_rule` takes a rule out of what the running app applies and out of
the file it came from, keeping that file's comments. `workbench policy rules` and the TUI's
rules screen both list what `rules_in_effect` finds.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.config.schema import Config

RULE_KINDS = ("allow", "ask", "deny")
_HEADER = re.compile(r"^\s*\[\s*([^\]]+?)\s*\]")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\"-]+)\s*=")


@dataclass(frozen=True)
class RuleInEffect:
    """One rule (or the policy) and where it was set."""

    kind: str
    """`allow`, `ask`, `deny`, or `policy` for the confirmation policy itself."""
    rule: str
    source: str
    """`default policy`, `user config`, `project config`, `environment` or `session`."""
    path: Path | None = None
    line: int | None = None
    variable: str = ""
    """The environment variable that set it (source `environment`)."""

    @property
    def where(self) -> str:
        """The source as a person reads it: `file:line`, the variable, or the source's name."""
        if self.path is not None:
            return f"{self.source} {self.path}:{self.line}" if self.line else str(self.path)
        if self.variable:
            return f"environment {self.variable}"
        return self.source

    @property
    def removable(self) -> bool:
        """Whether the rules screen can remove it (the environment's rules are changed there)."""
        return self.kind != "policy" and (self.path is not None or self.source == "session")


def user_file_of(config: Config, config_path: Path | None = None) -> Path:
    """The person's config file: `--config`, the file loaded, else the default one."""
    from workbench.paths import default_config_file

    return config_path or config.source_file or default_config_file()


def project_file_of(config: Config) -> Path:
    """The project's config file: the one loaded, else where "always allow" would create it."""
    from workbench.config.load import project_config_file
    from workbench.config.places import workspace_of

    return config.project_file or project_config_file(workspace_of(config))


def rules_in_effect(
    config: Config,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    unknown: str = "session",
) -> list[RuleInEffect]:
    """The policy, then the deny, ask and allow rules in effect, each with its source."""
    from workbench.config.keys import env_names

    env = os.environ if env is None else env
    user, project = user_file_of(config, config_path), project_file_of(config)
    user_lines, project_lines = _lines(user), _lines(project)
    found = [_policy_row(config, env, user, user_lines)]
    for kind in ("deny", "ask", "allow"):
        variables = [name for name in env_names(f"security.{kind}") if env.get(name)]
        for rule in getattr(config.security, kind):
            # A project's rules are added after every other layer's; the environment's
            # replace the user's file.
            if (line := line_of(project_lines, kind, rule)) is not None:
                found.append(RuleInEffect(kind, rule, "project config", project, line))
            elif variables:
                found.append(RuleInEffect(kind, rule, "environment", variable=variables[0]))
            elif (line := line_of(user_lines, kind, rule)) is not None:
                found.append(RuleInEffect(kind, rule, "user config", user, line))
            else:
                found.append(RuleInEffect(kind, rule, unknown))
    return found


def _policy_row(
    config: Config, env: Mapping[str, str], user: Path, lines: list[str]
) -> RuleInEffect:
    from workbench.config.keys import env_names

    security = config.security
    if security.confirmation == "risky":
        text = f"confirmation = risky: ask at risk {security.risk_threshold} and above"
    else:
        text = f"confirmation = {security.confirmation}"
    for key in ("security.confirmation", "security.risk_threshold"):
        variable = next((name for name in env_names(key) if env.get(name)), "")
        if variable:
            return RuleInEffect("policy", text, "environment", variable=variable)
        line = key_line(lines, key)
        if line is not None:
            return RuleInEffect("policy", text, "user config", user, line)
    return RuleInEffect("policy", text, "default policy")


def untrusted_rules(config: Config) -> list[RuleInEffect]:
    """The allow rules of an untrusted project config: listed (with their line), not applied."""
    state = config.project_trust
    if state is None or not state.withheld:
        return []
    lines = _lines(state.path)
    return [
        RuleInEffect("untrusted", rule, "project config", state.path, line_of(lines, "allow", rule))
        for rule in state.withheld
    ]


def _lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _keys_by_line(lines: list[str]) -> list[str]:
    """For each line, the dotted key whose value it belongs to ("" outside any)."""
    table, key, out = "", "", []
    for line in lines:
        if header := _HEADER.match(line):
            table, key = header.group(1).replace(" ", "").replace('"', ""), ""
        elif assigned := _KEY.match(line):
            name = assigned.group(1).replace('"', "")
            key = f"{table}.{name}" if table else name
        out.append(key)
    return out


def key_line(lines: list[str], dotted_key: str) -> int | None:
    """The line (1-based) where `dotted_key` is set in a TOML file's lines."""
    leaf = dotted_key.rsplit(".", 1)[-1]
    for number, (line, key) in enumerate(zip(lines, _keys_by_line(lines), strict=True), 1):
        if key == dotted_key and _KEY.match(line) and leaf in line.split("=", 1)[0]:
            return number
    return None


def line_of(lines: list[str], kind: str, rule: str) -> int | None:
    """The line (1-based) holding `rule` as a string in the list `security.<kind>`."""
    quoted = (json.dumps(rule), f"'{rule}'")
    for number, (line, key) in enumerate(zip(lines, _keys_by_line(lines), strict=True), 1):
        if key == f"security.{kind}" and any(text in line for text in quoted):
            return number
    return None


def remove_rule(config: Config, row: RuleInEffect) -> str:
    """Stop applying `row`'s rule and remove it from its file (comments kept); what was done,
    as a sentence. A ConfigError when the file cannot be changed (then nothing is)."""
    from workbench.config.edit import remove_from_list
    from workbench.config.load import ConfigError

    if not row.removable:
        how = f"unset or change {row.variable}" if row.variable else "change your config"
        raise ConfigError(f"{row.kind} rule {row.rule!r} comes from {row.where}: {how}.")
    if row.path is not None:
        from workbench.config.project_trust import keep_trust

        state = config.project_trust  # the records this config was checked against
        store = state.store if state is not None else None
        project = row.source == "project config"
        edit = keep_trust(row.path, store) if project else contextlib.nullcontext()
        with edit:  # the person's own edit: a trusted project file stays trusted
            remove_from_list(row.path, f"security.{row.kind}", row.rule)
    rules = getattr(config.security, row.kind)
    setattr(config.security, row.kind, [rule for rule in rules if rule != row.rule])
    where = f" from {row.path}" if row.path is not None else " (it was for this session only)"
    return f"Removed {row.kind} rule {row.rule!r}{where}."
