"""Load the configuration: defaults < config file < environment < command-line overrides.

`load_config()` reads the TOML file with tomlkit, adds the project's rules
(`<workspace>/.workbench/config.toml`, which may hold only `security.allow|ask|deny|examples`;
its lists are added to the others', never replacing them), maps the environment names
OpenHands users already know (`LLM_MODEL`, `SANDBOX_VOLUMES`, ...) plus
`WORKBENCH_<SECTION>_<KEY>` for every key, applies dotted overrides from the command line and
validates the result. Every mistake becomes a `ConfigError` naming where it came from (file or
variable), the key, what is allowed and how to fix it. `save_setting()` writes one key back and
`add_to_list()` appends to a list and `remove_from_list()` takes an item out, all keeping the
file's comments.
The schema itself is in `workbench/config/schema.py`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_origin

import tomlkit
from pydantic import SecretStr, ValidationError
from tomlkit.exceptions import TOMLKitError

from workbench import paths
from workbench.config.keys import (
    COMPAT_ENV,
    ENV_PREFIX,
    KEYS,
    SECTIONS,
    WB_ENV,
    allowed_text,
    suggest,
)
from workbench.config.schema import (
    Config,
)

if TYPE_CHECKING:
    from workbench.config.project_trust import ProjectTrust

PROJECT_CONFIG = Path(".workbench") / "config.toml"
"""The project's own config file, under the workspace."""
PROJECTKEYS = ("security.allow", "security.ask", "security.deny", "security.examples")
"""What a project's config may set: rules only. A repository someone cloned must not choose
the model, its endpoint, the sandbox's isolation or the confirmation policy."""
SANDBOX_ENV_PREFIX = "SANDBOX_ENV_"


class ConfigError(Exception):
    """A configuration mistake; the message names the source, the key, what is allowed, the fix."""

    def __init__(self, message: str, *, source: str = "", key: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.key = key


# --------------------------------------------------------------------------- layers


def _read_file(path: Path) -> dict[str, Any]:
    where = f"config file {path}"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{where}: cannot read it ({exc.strerror or exc}). Fix: check the path given to "
            "--config, or create the file (see config.template.toml).",
            source=where,
        ) from None
    return _parse(data, where)


def _parse(raw: bytes, where: str) -> dict[str, Any]:
    """A TOML document's data from its bytes; a ConfigError naming `where` if it is not one."""
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark some editors add is fine
    except UnicodeDecodeError:
        raise ConfigError(
            f"{where}: not UTF-8 text. Fix: save it as UTF-8.", source=where
        ) from None
    try:
        data: dict[str, Any] = tomlkit.parse(text).unwrap()
    except TOMLKitError as exc:
        raise ConfigError(
            f"{where}: not valid TOML: {exc}. Fix: correct that line (strings need quotes, "
            "sections look like [llm]).",
            source=where,
        ) from None
    return data


def _flatten(data: Mapping[str, Any], where: str, prefix: str = "") -> dict[str, Any]:
    """Dotted keys of a TOML document; unknown keys and misplaced tables are errors."""
    flat: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}{name}"
        if key in SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"{where}: '{key}' is a section, not a value. Fix: write its keys under "
                    f"a [{key}] header.",
                    source=where,
                    key=key,
                )
            flat.update(_flatten(value, where, f"{key}."))
        elif key in KEYS:
            flat[key] = value
        elif (renamed := _renamed(key, value, where)) is not None:
            flat[renamed[0]] = renamed[1]
        else:
            what = "section" if isinstance(value, Mapping) else "key"
            raise ConfigError(
                f"{where}: unknown {what} '{key}'.{suggest(key, what == 'section')} "
                f"{_known_under(prefix)} "
                "Fix: rename or remove it.",
                source=where,
                key=key,
            )
    return flat


def _renamed(key: str, value: Any, where: str) -> tuple[str, Any] | None:
    """An old key's new name and value (`config.schema.renamed_key`), or None."""
    from workbench.config.schema_sandbox import renamed_key

    try:
        return renamed_key(key, value, where)
    except ValueError as exc:
        raise ConfigError(f"{exc}", source=where, key=key) from None


def _known_under(prefix: str) -> str:
    """The keys and sections directly under `prefix` ("" = the top level), each once."""
    children = sorted({k[len(prefix) :].split(".", 1)[0] for k in KEYS if k.startswith(prefix)})
    keys = [child for child in children if prefix + child in KEYS]
    sections = [f"[{prefix}{child}]" for child in children if prefix + child in SECTIONS]
    where = f"in [{prefix.rstrip('.')}]" if prefix else "at the top level"
    parts = [
        f"keys {', '.join(keys)}" if keys else "",
        f"sections {', '.join(sections)}" if sections else "",
    ]
    return f"Known {where}: {'; '.join(part for part in parts if part)}."


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _env_value(key: str, text: str, var: str) -> Any:
    origin = get_origin(KEYS[key].annotation)
    if origin is list:
        return _split_list(text)
    if origin is dict:
        pairs: dict[str, str] = {}
        for item in _split_list(text):
            name, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(
                    f"environment variable {var}: {item!r} is not NAME=value. Fix: set it to "
                    "comma-separated NAME=value pairs, or use SANDBOX_ENV_<NAME>=value.",
                    source=f"environment variable {var}",
                    key=key,
                )
            pairs[name.strip()] = value
        return pairs
    return text


def _from_env(env: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    flat: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for var in sorted(env):  # OpenHands' names sort before WORKBENCH_*, so ours win
        text = env[var]
        if text == "":
            continue  # an empty variable counts as unset
        key = COMPAT_ENV.get(var) or WB_ENV.get(var)
        if key is None and var.startswith(ENV_PREFIX):
            rest = var[len(ENV_PREFIX) :].lower()
            if rest.split("_", 1)[0] in SECTIONS:  # in our namespace: a typo, not a stranger
                raise ConfigError(
                    f"environment variable {var}: no such setting.{_suggest_env(var)} "
                    f"Fix: rename or unset it.",
                    source=f"environment variable {var}",
                )
        if key is None:
            continue
        flat[key] = _env_value(key, text, var)
        sources[key] = f"environment variable {var}"
    extra_env = {
        var[len(SANDBOX_ENV_PREFIX) :]: value
        for var, value in env.items()
        if var.startswith(SANDBOX_ENV_PREFIX) and len(var) > len(SANDBOX_ENV_PREFIX)
    }
    if extra_env:
        flat["sandbox.env"] = {**flat.get("sandbox.env", {}), **extra_env}
        sources.setdefault("sandbox.env", "environment variables SANDBOX_ENV_*")
    return flat, sources


def _suggest_env(var: str) -> str:
    match = difflib.get_close_matches(var, [*WB_ENV, *COMPAT_ENV], n=1, cutoff=0.6)
    return f" Did you mean {match[0]}?" if match else ""


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Dotted keys made nested tables again: {"llm.model": x} -> {"llm": {"model": x}}."""
    nested: dict[str, Any] = {}
    for key, value in flat.items():
        *sections, leaf = key.split(".")
        node = nested
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = value
    return nested


def _fix_hint(source: str) -> str:
    if source.startswith("config file "):
        return f"Fix: edit it in {source[len('config file ') :]} (or remove it for the default)."
    if source.startswith("environment variable"):
        return f"Fix: change or unset the {source}."
    if source == "command line":
        return "Fix: change the command-line option."
    return "Fix: use an allowed value."


def explain(exc: ValidationError, sources: Mapping[str, str]) -> ConfigError:
    """A validation error as a ConfigError naming the source, the key and what is allowed."""
    lines: list[str] = []
    first_source, first_key = "", ""
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        key = ".".join(loc)
        while key not in KEYS and "." in key:
            key = key.rsplit(".", 1)[0]
        source = sources.get(key, "configuration")
        info = KEYS.get(key)
        allowed = f" Allowed: {allowed_text(info)}." if info else ""
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "finite_number":  # NaN or infinity, which no setting takes
            name = "NaN" if "nan" in str(error["input"]).lower() else "infinity"
            message = f"{name} ({error['input']!r}) is not a number allowed here"
        where = ".".join(loc)  # inside a table of tables ([mcp.servers.NAME]): the whole path
        lines.append(f"{source}: {where}: {message}.{allowed} {_fix_hint(source)}")
        first_source, first_key = first_source or source, first_key or key
    return ConfigError("\n".join(lines), source=first_source, key=first_key)


def load_config(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Build the configuration; `path` is `--config` (else the default file, if it exists)."""
    env = os.environ if env is None else env
    path_given = path
    flat: dict[str, Any] = {}
    sources: dict[str, str] = {}
    source_file: Path | None = None
    if path is None and paths.default_config_file(env).is_file():
        path = paths.default_config_file(env)
    if path is not None:
        source_file = Path(path).expanduser()
        where = f"config file {source_file}"
        file_flat = _flatten(_read_file(source_file), where)
        flat.update(file_flat)
        sources.update(dict.fromkeys(file_flat, where))
    env_flat, env_sources = _from_env(env)
    if "sandbox.env" in env_flat and isinstance(flat.get("sandbox.env"), dict):
        env_flat["sandbox.env"] = {**flat["sandbox.env"], **env_flat["sandbox.env"]}
    flat.update(env_flat)
    sources.update(env_sources)
    project = _add_project_layer(flat, sources, overrides or {}, env)
    for key, value in (overrides or {}).items():
        if value is None:
            continue  # an option that was not given
        key, value = _renamed(key, value, "command line") or (key, value)
        if key not in KEYS:
            raise ConfigError(
                f"command-line setting '{key}': unknown key.{suggest(key)}",
                source="command line",
                key=key,
            )
        flat[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        sources[key] = "command line"
    try:
        config = Config.model_validate(nest(flat))
    except ValidationError as exc:
        raise explain(exc, sources) from None
    config._source_file = source_file
    if source_file is not None and sources.get("mcp.servers", "").startswith("config file"):
        config._mcp_base = source_file.resolve().parent  # relative MCP paths start there
    config._project_file = project.path if project is not None else None
    config._project_trust = project
    config._loaded_with = (path_given, env, dict(overrides or {}))
    if config.security.examples:
        _check_rule_examples(config, sources.get("security.examples", "config"))
    return config


def project_config_file(workspace: Path) -> Path:
    """The project's config file in `workspace` (it need not exist)."""
    return workspace / PROJECT_CONFIG


def project_layer(raw: bytes, path: Path) -> dict[str, Any]:
    """The dotted keys of a project config's content `raw`: rules only, else a ConfigError."""
    where = f"project config file {path}"
    layer = _flatten(_parse(raw, where), where)
    for key in layer:
        if key not in PROJECTKEYS:
            raise ConfigError(
                f"{where}: '{key}' cannot be set by a project; a project's config holds rules "
                f"only ({', '.join(PROJECTKEYS)}). Fix: move it to your own config file "
                f"({paths.default_config_file()}) or remove it.",
                source=where,
                key=key,
            )
    return layer


def _add_project_layer(
    flat: dict[str, Any],
    sources: dict[str, str],
    overrides: Mapping[str, Any],
    env: Mapping[str, str],
) -> ProjectTrust | None:
    """Add the rules of the workspace's project config to `flat`: its deny and ask rules
    always, its allow rules (and their examples) only when the person trusted this exact
    content (`workbench.config.project_trust`). What was read and whether it is trusted, if a file
    was there."""
    from workbench.config.project_trust import ProjectTrust, digest_of, is_trusted, records_file

    workspace = overrides.get("sandbox.workspace") or flat.get("sandbox.workspace") or os.getcwd()
    try:
        path = project_config_file(Path(str(workspace)).expanduser().resolve())
        if not path.is_file():
            return None
        raw = path.read_bytes()  # hashed and parsed once: what is trusted is what applies
    except OSError:
        return None
    where = f"project config file {path}"
    layer = project_layer(raw, path)
    rules = {
        key.rsplit(".", 1)[1]: [str(rule) for rule in value]
        for key, value in layer.items()
        if key != "security.examples" and isinstance(value, list)
    }
    store = records_file(env)
    state = ProjectTrust(path, digest_of(raw), is_trusted(path, raw, store), rules, store)
    if not state.trusted:
        layer.pop("security.allow", None)
        withheld = set(state.withheld)
        examples = layer.get("security.examples")
        if isinstance(examples, Mapping):
            layer["security.examples"] = {k: v for k, v in examples.items() if k not in withheld}
    for key, value in layer.items():
        if key == "security.examples" and isinstance(value, Mapping):
            merged: Any = {**flat.get(key, {}), **value}
        elif isinstance(value, list):
            merged = [*flat.get(key, []), *(v for v in value if v not in flat.get(key, []))]
        else:
            merged = value  # not a list: validation names the file and the key
        flat[key] = merged
        sources[key] = where if key not in sources else f"{sources[key]} and {where}"
    return state


def _check_rule_examples(config: Config, source: str) -> None:
    """A rule that fails its own examples is a config error naming it."""
    from workbench.security.policy import example_errors

    errors = example_errors(config.security)
    if errors:
        lines = [f"{source}: security.examples: {error}" for error in errors]
        lines.append("Fix: correct the rule's pattern, or the example if the rule is right.")
        raise ConfigError("\n".join(lines), source=source, key="security.examples")


def require_model(config: Config) -> str:
    """The configured model, or a ConfigError telling how to set one (a run needs a model)."""
    if config.llm.model:
        return config.llm.model
    file = config.source_file or paths.default_config_file()
    raise ConfigError(
        "No LLM model is set, and this run needs one. Fix: set LLM_MODEL in the environment "
        f'(e.g. LLM_MODEL=openai/gpt-4o), or llm.model in {file} ([llm] model = "..."), or pass '
        "--model provider/name.",
        source=str(file),
        key="llm.model",
    )


def require_sandbox(config: Config) -> None:
    """A ConfigError telling how to finish the sandbox settings a run needs (the remote
    runtime needs its URL)."""
    if config.sandbox.runtime == "remote" and not config.sandbox.remote.url:
        file = config.source_file or paths.default_config_file()
        raise ConfigError(
            'sandbox.runtime is "remote", but sandbox.remote.url is not set. Fix: set '
            "WORKBENCH_SANDBOX_REMOTE_URL (e.g. http://sandbox.example:8000), or url under "
            f"[sandbox.remote] in {file}, or choose another runtime (--runtime local).",
            source=str(file),
            key="sandbox.remote.url",
        )
