"""Which hosts `network = "allowlist"` lets through by rule, and the settings that say so: the
default list, `net:` rules in security.allow and deny, globs, and the old boolean key."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.config.load import ConfigError, load_config
from workbench.events import CmdRunAction
from workbench.security.net_rules import rule_for
from workbench.security.policy import check


def test_the_default_list_holds_registries_and_source_hosts_and_nothing_else() -> None:
    config = load_config(env={})
    assert config.sandbox.network == "allowlist"
    for host in ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org", "crates.io"):
        assert rule_for(config, host).allowed, host
    assert rule_for(config, "raw.githubusercontent.com").rule == "net:*.githubusercontent.com"
    assert rule_for(config, "GitHub.com.").allowed  # as clients write it
    for host in ("example.com", "githubusercontent.com", "pypi.org.evil.com", "127.0.0.1"):
        assert rule_for(config, host).allowed is None, host  # asked


def test_allow_and_deny_rules_name_hosts_and_deny_wins() -> None:
    config = load_config(
        env={},
        overrides={
            "security.allow": ["net:*.example.com", "run:git status*"],
            "security.deny": ["net:evil.example.com", "net:pypi.org"],
        },
    )
    assert rule_for(config, "api.example.com").rule == "net:*.example.com"
    denied = rule_for(config, "evil.example.com")
    assert denied.allowed is False and denied.rule == "net:evil.example.com"
    assert rule_for(config, "pypi.org").allowed is False  # deny beats the default list
    # A net: rule names hosts only: it approves no action, however its text reads.
    verdict = check(CmdRunAction(command="curl pypi.org"), "HIGH", config.security, "/ws")
    assert verdict.rule != "allow:net:*.example.com" and verdict.needs_confirmation


def test_the_old_boolean_key_is_read_and_a_bad_value_says_what_to_write(tmp_path: Path) -> None:
    old = tmp_path / "old.toml"
    old.write_text("[sandbox.local]\nnetwork = false\n")
    assert load_config(old, env={}).sandbox.network == "off"
    old.write_text("[sandbox.local]\nnetwork = true\n")
    assert load_config(old, env={}).sandbox.network == "on"
    old.write_text('[sandbox.local]\nnetwork = "allowlist"\n')
    with pytest.raises(ConfigError, match=r'write sandbox.network = "off", "allowlist" or "on"'):
        load_config(old, env={})
    with pytest.raises(ConfigError, match="net:HOST"):
        load_config(env={}, overrides={"sandbox.network_allow": ["pypi.org"]})
