"""Configuration: layering, environment names, errors that say what to fix, secrets, template."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
import tomlkit

from workbench import paths
from workbench.config.edit import save_setting
from workbench.config.keys import env_names, known_keys
from workbench.config.load import ConfigError, load_config, require_model, require_sandbox
from workbench.config.schema import Config
from workbench.config.template import render_template

REPO = Path(__file__).resolve().parents[3]
TEMPLATE = REPO / "config.template.toml"
KEY = "sk-test-0123456789-SECRET"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


class TestLayering:
    def test_defaults_when_nothing_is_set(self) -> None:
        config = load_config(env={})
        assert config.model_dump() == Config().model_dump()
        assert config.source_file is None
        assert config.llm.model == ""
        assert config.sandbox.runtime == "local"

    def test_default_file_is_read_when_present(self, tmp_path: Path) -> None:
        env = {"WORKBENCH_CONFIG_DIR": str(tmp_path)}
        write(tmp_path / "config.toml", '[llm]\nmodel = "openai/from-default-file"\n')
        config = load_config(env=env)
        assert config.llm.model == "openai/from-default-file"
        assert config.source_file == tmp_path / "config.toml"

    def test_file_then_env_then_overrides(self, tmp_path: Path) -> None:
        file = write(
            tmp_path / "c.toml",
            '[llm]\nmodel = "file/model"\nbase_url = "http://file"\nnum_retries = 1\n'
            "[agent]\nmax_iterations = 7\n",
        )
        env = {"LLM_MODEL": "env/model", "WORKBENCH_LLM_NUM_RETRIES": "3"}
        config = load_config(file, env=env, overrides={"llm.model": "flag/model"})
        assert config.llm.model == "flag/model"  # overrides beat env and file
        assert config.llm.num_retries == 3  # env beats file
        assert config.llm.base_url == "http://file"  # file beats defaults
        assert config.agent.max_iterations == 7
        assert config.llm.timeout_s == 120.0  # default
        assert load_config(file, env=env).llm.model == "env/model"

    def test_overrides_of_none_are_ignored(self) -> None:
        config = load_config(env={"LLM_MODEL": "env/m"}, overrides={"llm.model": None})
        assert config.llm.model == "env/m"

    def test_openhands_environment_names(self) -> None:
        env = {
            "LLM_MODEL": "anthropic/claude",
            "LLM_API_KEY": KEY,
            "LLM_BASE_URL": "http://proxy:4000",
            "SANDBOX_VOLUMES": "/data:/workspace/data:ro,/tmp/x:/x",
            "SANDBOX_USER_ID": "1000",
            "WORKSPACE_BASE": "/work/here",
            "RUNTIME": "docker",
            "LOG_ALL_EVENTS": "true",
        }
        config = load_config(env=env)
        assert config.llm.model == "anthropic/claude"
        assert config.llm.api_key.get_secret_value() == KEY
        assert config.llm.base_url == "http://proxy:4000"
        assert config.sandbox.volumes == ["/data:/workspace/data:ro", "/tmp/x:/x"]
        assert config.sandbox.user_id == 1000
        assert config.sandbox.workspace == "/work/here"
        assert config.sandbox.runtime == "docker"
        assert config.log_all_events is True

    def test_workbench_names_for_nested_keys_and_lists(self) -> None:
        env = {
            "WORKBENCH_SANDBOX_DOCKER_MEMORY": "4g",
            "WORKBENCH_AGENT_ENABLE_BROWSER": "false",
            "WORKBENCH_SECURITY_ALLOW": "ls *, git status",
            "WORKBENCH_SECURITY_RISK_THRESHOLD": "medium",
            "WORKBENCH_BUDGET_MAX_COST_USD": "2.5",
            "WORKBENCH_BASE_IMAGE": "not-a-setting",  # scripts/base-image's own variable
            "WORKBENCH_DATA_DIR": "/somewhere",
        }
        config = load_config(env=env)
        assert config.sandbox.docker.memory == "4g"
        assert config.agent.enable_browser is False
        assert config.security.allow == ["ls *", "git status"]
        assert config.security.risk_threshold == "MEDIUM"
        assert config.budget.max_cost_usd == 2.5

    def test_every_key_has_a_workbench_variable(self) -> None:
        names = [name for key in known_keys() for name in env_names(key)]
        assert len(names) == len(set(names)), "two keys share an environment variable"
        for key in known_keys():
            assert f"WORKBENCH_{key.replace('.', '_').upper()}" in env_names(key)

    def test_sandbox_env_merges_file_and_variables(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", '[sandbox]\nenv = { A = "1", B = "1" }\n')
        env = {"SANDBOX_ENV_B": "2", "SANDBOX_ENV_C": "3"}
        assert load_config(file, env=env).sandbox.env == {"A": "1", "B": "2", "C": "3"}

    def test_empty_variable_counts_as_unset(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", '[llm]\nmodel = "file/model"\n')
        assert load_config(file, env={"LLM_MODEL": ""}).llm.model == "file/model"


class TestErrors:
    def test_unknown_key_in_file_suggests_the_closest(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", '[llm]\nmodle = "x"\n')
        with pytest.raises(ConfigError) as caught:
            load_config(file, env={})
        message = str(caught.value)
        assert str(file) in message
        assert "llm.modle" in message
        assert "Did you mean 'llm.model'?" in message
        assert "Fix:" in message
        assert caught.value.key == "llm.modle"

    def test_unknown_section_and_misplaced_key(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", 'model = "x"\n')
        with pytest.raises(ConfigError, match=r"unknown key 'model'.*'llm\.model'"):
            load_config(file, env={})
        file = write(tmp_path / "d.toml", 'llm = "x"\n')
        with pytest.raises(ConfigError, match=r"'llm' is a section.*\[llm\]"):
            load_config(file, env={})

    @pytest.mark.parametrize(
        ("toml", "key", "allowed"),
        [
            ('[agent]\nmax_iterations = "many"\n', "agent.max_iterations", "a whole number"),
            ("[budget]\nmax_cost_usd = -1\n", "budget.max_cost_usd", "a number >= 0"),
            ('[sandbox]\nruntime = "k8s"\n', "sandbox.runtime", '"local", "docker", "remote"'),
            ('[sandbox]\nvolumes = ["nocolon"]\n', "sandbox.volumes", "host_path:container_path"),
            ("[llm]\nstream = 3\n", "llm.stream", "true or false"),
            ("[llm]\nretry_min_wait_s = 5\nretry_max_wait_s = 1\n", "llm.retry_max_wait_s", ""),
            ('[security]\nconfirmation = "sometimes"\n', "security.confirmation", '"risky"'),
        ],
    )
    def test_bad_value_names_file_key_allowed_and_fix(
        self, tmp_path: Path, toml: str, key: str, allowed: str
    ) -> None:
        file = write(tmp_path / "c.toml", toml)
        with pytest.raises(ConfigError) as caught:
            load_config(file, env={})
        message = str(caught.value)
        assert f"config file {file}: {key}:" in message
        assert allowed in message
        assert f"Fix: edit it in {file}" in message

    def test_bad_environment_value_names_the_variable(self) -> None:
        with pytest.raises(ConfigError) as caught:
            load_config(env={"RUNTIME": "kubernetes"})
        message = str(caught.value)
        assert "environment variable RUNTIME" in message
        assert "sandbox.runtime" in message
        assert '"docker"' in message
        assert "unset the environment variable RUNTIME" in message

    def test_unknown_workbench_variable_is_an_error(self) -> None:
        with pytest.raises(ConfigError, match=r"WORKBENCH_LLM_MODLE.*WORKBENCH_LLM_MODEL"):
            load_config(env={"WORKBENCH_LLM_MODLE": "x"})

    def test_bad_override(self) -> None:
        with pytest.raises(ConfigError, match=r"'agent\.max_iteration'.*agent\.max_iterations"):
            load_config(env={}, overrides={"agent.max_iteration": 3})
        with pytest.raises(ConfigError, match=r"command line: agent\.max_iterations.*>= 1"):
            load_config(env={}, overrides={"agent.max_iterations": 0})

    def test_broken_toml_and_missing_file(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", "[llm\nmodel = \n")
        with pytest.raises(ConfigError, match=f"config file {re.escape(str(file))}: not valid"):
            load_config(file, env={})
        missing = tmp_path / "nope.toml"
        with pytest.raises(ConfigError, match=r"cannot read it.*--config"):
            load_config(missing, env={})

    def test_unknown_section_names_each_known_key_and_section_once(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", "[bogus]\nx = 1\n")
        with pytest.raises(ConfigError) as caught:
            load_config(file, env={})
        message = str(caught.value)
        assert "unknown section 'bogus'" in message and str(file) in message
        known = message.split("Known at the top level: ", 1)[1].split(". Fix:", 1)[0]
        names = re.findall(r"[\w.\[\]]+", known.replace("keys", "").replace("sections", ""))
        assert len(names) == len(set(names)), known  # each once
        assert "[llm]" in names and "[sandbox]" in names and "log_all_events" in names
        assert "api_key" not in names  # a key of a section is not a top-level key
        file = write(tmp_path / "d.toml", "[sandbox.dokcer]\nmemory = '1g'\n")
        with pytest.raises(ConfigError) as caught:
            load_config(file, env={})
        message = str(caught.value)
        assert "unknown section 'sandbox.dokcer'" in message
        assert "Did you mean 'sandbox.docker'" in message
        sections = "[sandbox.docker], [sandbox.limits], [sandbox.local], [sandbox.remote]"
        assert f"sections {sections}" in message

    def test_a_byte_order_mark_is_accepted(self, tmp_path: Path) -> None:
        file = tmp_path / "c.toml"
        file.write_bytes(b'\xef\xbb\xbf[llm]\nmodel = "openai/bom"\n')
        assert load_config(file, env={}).llm.model == "openai/bom"
        save_setting(file, "llm.base_url", "http://127.0.0.1:9/v1")  # saving keeps working
        config = load_config(file, env={})
        assert (config.llm.model, config.llm.base_url) == ("openai/bom", "http://127.0.0.1:9/v1")

    @pytest.mark.parametrize(
        ("where", "value", "name"),
        [("file", "nan", "NaN"), ("file", "-inf", "infinity"), ("env", "NaN", "NaN")],
    )
    def test_nan_and_infinity_are_not_numbers_a_setting_takes(
        self, tmp_path: Path, where: str, value: str, name: str
    ) -> None:
        file = write(tmp_path / "c.toml", f"[llm]\ntemperature = {value}\n")
        with pytest.raises(ConfigError) as caught:
            if where == "file":
                load_config(file, env={})
            else:
                load_config(env={"WORKBENCH_LLM_TEMPERATURE": value})
        message = str(caught.value)
        assert f"llm.temperature: {name} (" in message and "is not a number allowed here" in message
        assert "less than" not in message and "greater than" not in message
        with pytest.raises(ConfigError, match=r"budget\.max_cost_usd: NaN \(nan\) is not a number"):
            load_config(env={}, overrides={"budget.max_cost_usd": float("nan")})

    def test_remote_url_must_be_http(self) -> None:
        with pytest.raises(ConfigError, match=r"sandbox\.remote\.url: .*http:// or https://"):
            load_config(env={"WORKBENCH_SANDBOX_REMOTE_URL": "sandbox:8000"})

    def test_require_sandbox(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", '[sandbox]\nruntime = "remote"\n')
        with pytest.raises(ConfigError) as caught:
            require_sandbox(load_config(file, env={}))
        message = str(caught.value)
        assert caught.value.key == "sandbox.remote.url"
        assert "WORKBENCH_SANDBOX_REMOTE_URL" in message and str(file) in message
        assert "Fix:" in message and "--runtime local" in message
        env = {"WORKBENCH_SANDBOX_REMOTE_URL": "http://127.0.0.1:9"}
        require_sandbox(load_config(file, env=env))  # complete: no error
        require_sandbox(load_config(env={}))  # the local runtime needs no URL

    def test_require_model(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", "[agent]\nmax_iterations = 3\n")
        with pytest.raises(ConfigError) as caught:
            require_model(load_config(file, env={}))
        message = str(caught.value)
        assert "LLM_MODEL" in message and "--model" in message and str(file) in message
        assert require_model(load_config(file, env={"LLM_MODEL": "a/b"})) == "a/b"


class TestSecrets:
    def test_key_never_shows(self, tmp_path: Path) -> None:
        file = write(tmp_path / "c.toml", f'[sandbox.remote]\napi_key = "{KEY}-remote"\n')
        config = load_config(file, env={"LLM_API_KEY": KEY})
        for text in (
            repr(config),
            str(config),
            config.model_dump_json(),
            str(config.model_dump()),
            str(config.redacted_dict()),
            config.redacted_digest(),
        ):
            assert KEY not in text
        assert config.llm.api_key.get_secret_value() == KEY

    def test_digest_ignores_secrets_but_not_settings(self) -> None:
        one = load_config(env={"LLM_MODEL": "a/b", "LLM_API_KEY": "key-one-1234"})
        two = load_config(env={"LLM_MODEL": "a/b", "LLM_API_KEY": "key-two-5678"})
        other = load_config(env={"LLM_MODEL": "a/c", "LLM_API_KEY": "key-one-1234"})
        assert one.redacted_digest() == two.redacted_digest()
        assert one.redacted_digest() != other.redacted_digest()
        assert re.fullmatch(r"[0-9a-f]{64}", one.redacted_digest())

    def test_sandbox_env_values_are_masked(self) -> None:
        config = load_config(env={"SANDBOX_ENV_GITHUB_TOKEN": "ghp_secretvalue"})
        assert config.redacted_dict()["sandbox"]["env"] == {"GITHUB_TOKEN": "**********"}


class TestTemplate:
    def test_template_is_rendered_from_the_schema(self) -> None:
        assert TEMPLATE.read_text() == render_template(), (
            "config.template.toml is stale: python -m workbench.config.template "
            "> config.template.toml"
        )

    def test_template_loads(self) -> None:
        assert load_config(TEMPLATE, env={}).model_dump() == Config().model_dump()

    def test_template_documents_every_key_with_its_default(self, tmp_path: Path) -> None:
        uncommented = re.sub(r"(?m)^# (\w+ = )", r"\1", TEMPLATE.read_text())
        data = tomlkit.parse(uncommented).unwrap()
        for key, info in known_keys().items():
            node = data
            for part in key.split("."):
                assert part in node, f"{key} missing from config.template.toml"
                node = node[part]
            default = info.get_default(call_default_factory=True)
            if hasattr(default, "get_secret_value"):
                default = default.get_secret_value()
            assert node == default, key
        config = load_config(write(tmp_path / "all.toml", uncommented), env={})
        assert config.model_dump() == Config().model_dump()


class TestSaveSetting:
    def test_keeps_comments_and_sets_0600(self, tmp_path: Path) -> None:
        file = write(
            tmp_path / "c.toml",
            '# my settings\n[llm]\n# the model I like\nmodel = "old/model"  # inline\n',
        )
        os.chmod(file, 0o644)
        save_setting(file, "llm.model", "new/model")
        save_setting(file, "llm.api_key", KEY)
        save_setting(file, "sandbox.docker.memory", "2g")
        save_setting(file, "log_all_events", True)
        text = file.read_text()
        assert "# my settings" in text and "# the model I like" in text
        assert 'model = "new/model"' in text
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        config = load_config(file, env={})
        assert config.llm.model == "new/model"
        assert config.llm.api_key.get_secret_value() == KEY
        assert config.sandbox.docker.memory == "2g"
        assert config.log_all_events is True

    def test_creates_the_file_private(self, tmp_path: Path) -> None:
        file = tmp_path / "new" / "dir" / "config.toml"
        save_setting(file, "llm.base_url", "http://127.0.0.1:9/v1")
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
        assert load_config(file, env={}).llm.base_url == "http://127.0.0.1:9/v1"

    def test_coerces_and_validates(self, tmp_path: Path) -> None:
        file = tmp_path / "c.toml"
        save_setting(file, "agent.max_iterations", "12")
        assert load_config(file, env={}).agent.max_iterations == 12
        with pytest.raises(ConfigError, match=r"agent\.max_iterations.*>= 1"):
            save_setting(file, "agent.max_iterations", 0)
        with pytest.raises(ConfigError, match=r"Did you mean 'llm\.model'"):
            save_setting(file, "llm.modell", "x")
        assert load_config(file, env={}).agent.max_iterations == 12


def test_saving_to_a_full_disk_changes_nothing_and_says_so(
    small_disk: Callable[..., Path],
) -> None:
    disk = small_disk("cfg", 16 * 1024)
    file = write(disk / "config.toml", '# mine\n[llm]\nmodel = "old/model"\n')
    before = file.read_bytes()
    (disk / "filler").write_bytes(b"\0" * (16 * 1024 - 4096))  # the last page is the file's
    with pytest.raises(ConfigError) as caught:
        save_setting(file, "security.allow", ["bash:" + "x" * 8000])
    message = str(caught.value)
    assert "No space left on device" in message and "not changed" in message
    assert str(file) in message and "Fix:" in message
    assert file.read_bytes() == before
    assert sorted(p.name for p in disk.iterdir()) == ["config.toml", "filler"]  # no temp left


def test_paths_follow_the_environment(tmp_path: Path) -> None:
    env = {"WORKBENCH_CONFIG_DIR": str(tmp_path / "c"), "WORKBENCH_DATA_DIR": str(tmp_path / "d")}
    assert paths.config_dir(env) == tmp_path / "c"
    assert paths.default_config_file(env) == tmp_path / "c" / "config.toml"
    assert paths.sessions_dir(env) == tmp_path / "d" / "sessions"
    assert paths.data_dir() == Path(os.environ["WORKBENCH_DATA_DIR"])  # set by conftest
    assert "workbench" in str(paths.config_dir({}))


def test_an_mcp_url_s_credentials_are_masked_and_scrubbed() -> None:
    """A URL server's key in its query or its password once went into every session log."""
    from workbench.config.load import load_config
    from workbench.session.opening import secrets_of

    url = "https://bob:urlpass-444@mcp.example/mcp?api_key=url-secret-999&mode=fast"
    config = load_config(env={}, overrides={"mcp.servers": {"remote": {"url": url}}})
    shown = config.redacted_dict()["mcp"]["servers"]["remote"]["url"]
    assert "urlpass-444" not in shown and "url-secret-999" not in shown
    assert shown.startswith("https://bob:**********@mcp.example/mcp?api_key=**********")
    assert {"urlpass-444", "url-secret-999"} <= set(secrets_of(config))
    assert "fast" not in secrets_of(config) and shown.endswith("&mode=fast")
