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
The schema itself is in `workbench/config_schema.py`.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args, get_origin

import annotated_types
import tomlkit
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo
from tomlkit.exceptions import TOMLKitError

from workbench import paths
from workbench.config_schema import (
    AgentConfig,
    BudgetConfig,
    Config,
    LLMConfig,
    SandboxConfig,
    SecurityConfig,
    SessionConfig,
    UIConfig,
)

if TYPE_CHECKING:
    from workbench.project_trust import ProjectTrust

__all__ = [
    "AgentConfig",
    "BudgetConfig",
    "Config",
    "ConfigError",
    "LLMConfig",
    "SandboxConfig",
    "SecurityConfig",
    "SessionConfig",
    "UIConfig",
    "add_to_list",
    "allowed_text",
    "check_setting",
    "env_names",
    "known_keys",
    "load_config",
    "project_config_file",
    "project_layer",
    "remove_from_list",
    "require_model",
    "require_sandbox",
    "save_setting",
]

# The names OpenHands users already set, mapped to our keys.
COMPAT_ENV: dict[str, str] = {
    "LLM_MODEL": "llm.model",
    "LLM_API_KEY": "llm.api_key",
    "LLM_BASE_URL": "llm.base_url",
    "SANDBOX_VOLUMES": "sandbox.volumes",
    "SANDBOX_USER_ID": "sandbox.user_id",
    "WORKSPACE_BASE": "sandbox.workspace",
    "RUNTIME": "sandbox.runtime",
    "LOG_ALL_EVENTS": "log_all_events",
}
ENV_PREFIX = "WORKBENCH_"
PROJECT_CONFIG = Path(".workbench") / "config.toml"
"""The project's own config file, under the workspace."""
PROJECT_KEYS = ("security.allow", "security.ask", "security.deny", "security.examples")
"""What a project's config may set: rules only. A repository someone cloned must not choose
the model, its endpoint, the sandbox's isolation or the confirmation policy."""
SANDBOX_ENV_PREFIX = "SANDBOX_ENV_"


class ConfigError(Exception):
    """A configuration mistake; the message names the source, the key, what is allowed, the fix."""

    def __init__(self, message: str, *, source: str = "", key: str = "") -> None:
        super().__init__(message)
        self.source = source
        self.key = key


# --------------------------------------------------------------------------- the schema's keys


def _walk(model: type[BaseModel], prefix: str = "") -> dict[str, FieldInfo]:
    keys: dict[str, FieldInfo] = {}
    for name, info in model.model_fields.items():
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            keys.update(_walk(annotation, f"{prefix}{name}."))
        else:
            keys[f"{prefix}{name}"] = info
    return keys


_KEYS = _walk(Config)
_SECTIONS = {key.rsplit(".", 1)[0] for key in _KEYS if "." in key} | {
    key.split(".")[0] for key in _KEYS if "." in key
}
_WB_ENV = {ENV_PREFIX + key.replace(".", "_").upper(): key for key in _KEYS}


def known_keys() -> dict[str, FieldInfo]:
    """Every dotted key (`llm.model`, `sandbox.docker.memory`, ...) with its pydantic field."""
    return dict(_KEYS)


def env_names(key: str) -> list[str]:
    """The environment variables that set `key`, OpenHands' name first."""
    return [name for name, k in COMPAT_ENV.items() if k == key] + [
        name for name, k in _WB_ENV.items() if k == key
    ]


def allowed_text(info: FieldInfo) -> str:
    """What a key accepts, in words: "one of ...", "a whole number >= 0", ..."""
    extra = info.json_schema_extra
    if isinstance(extra, dict) and "allowed" in extra:
        return str(extra["allowed"])
    annotation = info.annotation
    origin = get_origin(annotation)
    if origin is Literal:
        return "one of " + ", ".join(f'"{value}"' for value in get_args(annotation))
    if origin is list:
        return "a list of strings"
    if origin is dict:
        return 'a table of NAME = "value" strings'
    words: dict[Any, str] = {bool: "true or false", int: "a whole number", float: "a number"}
    text = words.get(annotation, "a string")
    for meta in info.metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            bound = getattr(meta, attr, None)
            if isinstance(meta, annotated_types.BaseMetadata) and bound is not None:
                text += f" {sign} {bound}"
        pattern = getattr(meta, "pattern", None)
        if pattern:
            text += f" matching {pattern}"
    return text


def _suggest(key: str, section: bool = False) -> str:
    if section:  # a table: only a section can be meant
        found = difflib.get_close_matches(key, sorted(_SECTIONS), n=1, cutoff=0.6)
        return f" Did you mean '{found[0]}'?" if found else ""
    match = difflib.get_close_matches(key, list(_KEYS), n=1, cutoff=0.6)
    if not match:
        leaf = key.rsplit(".", 1)[-1]
        match = [k for k in _KEYS if k.rsplit(".", 1)[-1] == leaf][:1]
    return f" Did you mean '{match[0]}'?" if match else ""


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
        if key in _SECTIONS:
            if not isinstance(value, Mapping):
                raise ConfigError(
                    f"{where}: '{key}' is a section, not a value. Fix: write its keys under "
                    f"a [{key}] header.",
                    source=where,
                    key=key,
                )
            flat.update(_flatten(value, where, f"{key}."))
        elif key in _KEYS:
            flat[key] = value
        elif (renamed := _renamed(key, value, where)) is not None:
            flat[renamed[0]] = renamed[1]
        else:
            what = "section" if isinstance(value, Mapping) else "key"
            raise ConfigError(
                f"{where}: unknown {what} '{key}'.{_suggest(key, what == 'section')} "
                f"{_known_under(prefix)} "
                "Fix: rename or remove it.",
                source=where,
                key=key,
            )
    return flat


def _renamed(key: str, value: Any, where: str) -> tuple[str, Any] | None:
    """An old key's new name and value (`config_schema.renamed_key`), or None."""
    from workbench.config_schema import renamed_key

    try:
        return renamed_key(key, value, where)
    except ValueError as exc:
        raise ConfigError(f"{exc}", source=where, key=key) from None


def _known_under(prefix: str) -> str:
    """The keys and sections directly under `prefix` ("" = the top level), each once."""
    children = sorted({k[len(prefix) :].split(".", 1)[0] for k in _KEYS if k.startswith(prefix)})
    keys = [child for child in children if prefix + child in _KEYS]
    sections = [f"[{prefix}{child}]" for child in children if prefix + child in _SECTIONS]
    where = f"in [{prefix.rstrip('.')}]" if prefix else "at the top level"
    parts = [
        f"keys {', '.join(keys)}" if keys else "",
        f"sections {', '.join(sections)}" if sections else "",
    ]
    return f"Known {where}: {'; '.join(part for part in parts if part)}."


def _split_list(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _env_value(key: str, text: str, var: str) -> Any:
    origin = get_origin(_KEYS[key].annotation)
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
        key = COMPAT_ENV.get(var) or _WB_ENV.get(var)
        if key is None and var.startswith(ENV_PREFIX):
            rest = var[len(ENV_PREFIX) :].lower()
            if rest.split("_", 1)[0] in _SECTIONS:  # in our namespace: a typo, not a stranger
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
    match = difflib.get_close_matches(var, [*_WB_ENV, *COMPAT_ENV], n=1, cutoff=0.6)
    return f" Did you mean {match[0]}?" if match else ""


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
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


def _explain(exc: ValidationError, sources: Mapping[str, str]) -> ConfigError:
    lines: list[str] = []
    first_source, first_key = "", ""
    for error in exc.errors():
        loc = [str(part) for part in error["loc"]]
        key = ".".join(loc)
        while key not in _KEYS and "." in key:
            key = key.rsplit(".", 1)[0]
        source = sources.get(key, "configuration")
        info = _KEYS.get(key)
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
        if key not in _KEYS:
            raise ConfigError(
                f"command-line setting '{key}': unknown key.{_suggest(key)}",
                source="command line",
                key=key,
            )
        flat[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        sources[key] = "command line"
    try:
        config = Config.model_validate(_nest(flat))
    except ValidationError as exc:
        raise _explain(exc, sources) from None
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
        if key not in PROJECT_KEYS:
            raise ConfigError(
                f"{where}: '{key}' cannot be set by a project; a project's config holds rules "
                f"only ({', '.join(PROJECT_KEYS)}). Fix: move it to your own config file "
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
    content (`workbench.project_trust`). What was read and whether it is trusted, if a file
    was there."""
    from workbench.project_trust import ProjectTrust, digest_of, is_trusted, records_file

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


# --------------------------------------------------------------------------- writing back


def check_setting(path: Path, dotted_key: str, value: Any) -> Any:
    """`value` as `dotted_key` stores it, or a ConfigError saying what is allowed."""
    if dotted_key not in _KEYS:
        raise ConfigError(
            f"cannot save '{dotted_key}': unknown key.{_suggest(dotted_key)}", key=dotted_key
        )
    raw = value.get_secret_value() if isinstance(value, SecretStr) else value
    try:
        checked = Config.model_validate(_nest({dotted_key: raw}))
    except ValidationError as exc:
        raise _explain(exc, {dotted_key: f"saving to {path}"}) from None
    node: Any = checked
    for part in dotted_key.split("."):
        node = getattr(node, part)
    return node.get_secret_value() if isinstance(node, SecretStr) else node


def save_setting(path: Path, dotted_key: str, value: Any) -> None:
    """Set one key in the TOML file at `path`, keeping its comments; the file ends up 0600."""
    node = check_setting(path, dotted_key, value)
    target = Path(path).expanduser().resolve()
    text = target.read_text(encoding="utf-8-sig") if target.exists() else ""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"config file {target}: not valid TOML ({exc}); not changed. Fix that line first.",
            source=f"config file {target}",
        ) from None
    *sections, leaf = dotted_key.split(".")
    table: Any = document
    for section in sections:
        if section not in table:
            table[section] = tomlkit.table()
        table = table[section]
    table[leaf] = node
    _write_private(target, document.as_string())


def add_to_list(path: Path, dotted_key: str, item: str) -> bool:
    """Append `item` to the list `dotted_key` of the TOML file at `path` (created if missing),
    keeping its comments, those inside the list too; False when it was there already."""
    if dotted_key not in _KEYS:
        raise ConfigError(f"cannot save '{dotted_key}': unknown key.", key=dotted_key)
    target = Path(path).expanduser().resolve()
    where = f"config file {target}"
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    try:
        document = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise ConfigError(
            f"{where}: not valid TOML ({exc}); not changed. Fix that line first.", source=where
        ) from None
    *sections, leaf = dotted_key.split(".")
    table: Any = document
    for section in sections:
        if section not in table:
            table[section] = tomlkit.table()
        table = table[section]
    if leaf not in table:
        table[leaf] = tomlkit.array()
    current = table[leaf]
    if not isinstance(current, list):
        raise ConfigError(
            f"{where}: '{dotted_key}' is not a list; not changed. Fix: make it a list of "
            'strings, e.g. allow = ["run:git status*"].',
            source=where,
            key=dotted_key,
        )
    if item in current:
        return False
    current.append(item)
    _write_private(target, document.as_string())
    return True


def remove_from_list(path: Path, dotted_key: str, item: str) -> bool:
    """Remove `item` from the list `dotted_key` of the TOML file at `path`, keeping the file's
    other lines and comments; False when it was not there (the file is then unchanged)."""
    target = Path(path).expanduser().resolve()
    where = f"config file {target}"
    try:
        text = target.read_text(encoding="utf-8-sig")
        document = tomlkit.parse(text)
    except FileNotFoundError:
        return False
    except (OSError, UnicodeDecodeError, TOMLKitError) as exc:
        raise ConfigError(
            f"{where}: cannot read it ({exc}); not changed. Fix that first.", source=where
        ) from None
    table: Any = document
    for section in dotted_key.split("."):
        if not isinstance(table, Mapping) or section not in table:
            return False
        table = table[section]
    if not isinstance(table, list) or item not in table:
        return False
    while item in table:
        del table[table.index(item)]
    _write_private(target, document.as_string())
    return True


def _write_private(target: Path, text: str) -> None:
    """Replace `target` with `text` (mode 0600) in one step; a failed write (a full disk)
    leaves the file as it was and no temporary file, and says so as a ConfigError."""
    temp: str | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, target)
    except BaseException as exc:
        if temp is not None:
            Path(temp).unlink(missing_ok=True)
        if not isinstance(exc, OSError):
            raise
        where = f"config file {target}"
        raise ConfigError(
            f"{where}: cannot save it ({exc.strerror or exc}); it was not changed. Fix: free "
            f"space on the disk holding {target.parent}, or make it writable.",
            source=where,
        ) from exc
