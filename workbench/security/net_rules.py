"""Which hosts the sandbox may reach under `sandbox.network = "allowlist"`, by rule.

A rule is `net:HOST`, HOST a glob matched against the host name as the client asked for it
(lower case, no port): `net:pypi.org`, `net:*.githubusercontent.com`. They come from
`sandbox.network_allow` (the registries and source hosts by default) and from the `net:` rules
of `security.allow` (where the TUI's "always" saves them); a `net:` rule in `security.deny`
refuses without asking, whatever allows it. `*.example.com` does not match `example.com`
itself: list both where both are meant. No action's text matches a `net:` rule, and no other
rule matches a host.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from workbench.config.schema import Config

PREFIX = "net:"


def host_rule(host: str) -> str:
    """The rule that allows `host` alone."""
    return f"{PREFIX}{host}"


def _first(rules: Iterable[str], host: str) -> str | None:
    host = host.lower().rstrip(".")
    for rule in rules:
        if rule.startswith(PREFIX) and fnmatchcase(host, rule[len(PREFIX) :].strip().lower()):
            return rule
    return None


@dataclass(frozen=True)
class HostRuling:
    """What the rules say of a host: allowed or denied by `rule`, or nothing (ask)."""

    allowed: bool | None
    rule: str = ""


def rule_for(config: Config, host: str) -> HostRuling:
    """Deny beats allow; neither: ask (allowed is None)."""
    denied = _first(config.security.deny, host)
    if denied is not None:
        return HostRuling(False, denied)
    allowed = _first([*config.sandbox.network_allow, *config.security.allow], host)
    if allowed is not None:
        return HostRuling(True, allowed)
    return HostRuling(None)
