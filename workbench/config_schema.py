"""The configuration's typed schema: one pydantic model per `[section]`, a docstring per key.

The docstrings are the documentation: `config.template.toml` is rendered from them
(`workbench/config_template.py`), and error messages quote the allowed values from the types.
Loading, layering and errors live in `workbench/config.py`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sandbox.defaults import DEFAULT_SOFT_TIMEOUT_S

Runtime = Literal["local", "docker", "remote"]
Isolation = Literal["auto", "none", "bwrap"]
ConfirmationPolicy = Literal["always", "risky", "never"]
RiskThreshold = Literal["LOW", "MEDIUM", "HIGH"]
HeadlessOnConfirm = Literal["approve", "reject", "stop"]
NetworkMode = Literal["off", "allowlist", "on"]

DEFAULT_NETWORK_ALLOW = (
    "net:pypi.org",
    "net:pypi.python.org",
    "net:files.pythonhosted.org",
    "net:registry.npmjs.org",
    "net:registry.yarnpkg.com",
    "net:crates.io",
    "net:static.crates.io",
    "net:index.crates.io",
    "net:proxy.golang.org",
    "net:sum.golang.org",
    "net:rubygems.org",
    "net:repo.maven.apache.org",
    "net:repo1.maven.org",
    "net:conda.anaconda.org",
    "net:github.com",
    "net:api.github.com",
    "net:codeload.github.com",
    "net:*.githubusercontent.com",
    "net:gitlab.com",
    "net:bitbucket.org",
)
"""Package registries and source hosts: what `pip`, `npm`, `cargo`, `go` and `git clone` reach."""

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VOLUME_HINT = 'strings "host_path:container_path[:ro|rw]" with an absolute container_path'


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, field docstrings are docs."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        validate_assignment=True,
        allow_inf_nan=False,  # no setting means anything by NaN or infinity
    )


class LLMConfig(Section):
    """`[llm]`: which model to call and how."""

    model: str = ""
    """The model as litellm names it, "provider/name" (e.g. "openai/gpt-4o"); empty: not set."""
    api_key: SecretStr = SecretStr("")
    """The provider's API key. Never logged or shown; prefer the LLM_API_KEY variable."""
    base_url: str = ""
    """The API base URL for a self-hosted or proxy endpoint; empty: the provider's default."""
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    """Sampling temperature."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one request may take before it counts as timed out."""
    num_retries: int = Field(default=5, ge=0, le=100)
    """Retries after a rate limit (429), a server error (5xx), a timeout or a dropped connection."""
    retry_min_wait_s: float = Field(default=2.0, ge=0)
    """Wait before the first retry; each further retry waits twice as long."""
    retry_max_wait_s: float = Field(default=60.0, ge=0)
    """The longest wait between two retries."""
    connect_retries: int = Field(default=2, ge=0, le=100)
    """Retries after a refused connection (nothing listening at the address): a server that
    is down rarely comes back within the minute num_retries would wait."""
    connect_retry_wait_s: float = Field(default=1.0, ge=0)
    """Wait before the first retry of a refused connection; each further one waits twice as
    long (at most retry_max_wait_s)."""
    deadline_s: float = Field(default=300.0, ge=0, allow_inf_nan=False)
    """Seconds one model call may take in all, its retries and the waits between them
    included; then the run ends with an LLM error (exit 7). 0: no deadline."""
    wait_notice_s: float = Field(default=10.0, ge=0, allow_inf_nan=False)
    """Seconds without an answer from the model before a waiting notice is shown (again each
    time the wait doubles); 0: never."""
    stream: bool = False
    """Stream the reply token by token (the TUI shows text as it arrives)."""
    max_output_tokens: int = Field(default=0, ge=0)
    """The most tokens one reply may have; 0: the provider's default."""
    drop_params: bool = True
    """Silently drop request parameters the provider does not support (litellm's drop_params)."""
    max_input_tokens: int = Field(default=0, ge=0)
    """The model's context window in tokens, which every request is kept under (see
    [condense]); 0: what litellm knows of the model, else 32000."""

    @field_validator("retry_max_wait_s")
    @classmethod
    def _max_not_below_min(cls, value: float, info: ValidationInfo) -> float:
        low = info.data.get("retry_min_wait_s")
        if low is not None and value < low:
            raise ValueError(f"must be at least retry_min_wait_s ({low})")
        return value


class AgentConfig(Section):
    """`[agent]`: how long and how the agent may work."""

    max_iterations: int = Field(default=100, ge=1)
    """The most steps (LLM calls) one task may take."""
    max_observation_chars: int = Field(default=30_000, ge=100)
    """Longer tool output is cut in the middle before it reaches the model."""
    stuck_threshold: int = Field(default=4, ge=2)
    """Repeats of the same action and result (or the same error) that count as stuck."""
    max_malformed_calls: int = Field(default=10, ge=1)
    """Malformed tool calls in a row (bad JSON, unknown tool ...) that end the session."""
    enable_browser: bool = True
    """Offer the browser tool to the agent."""
    enable_jupyter: bool = True
    """Offer the IPython tool to the agent."""


class BudgetConfig(Section):
    """`[budget]`: limits per session; 0 means unlimited."""

    max_tokens: int = Field(default=0, ge=0)
    """Prompt plus completion tokens the session may use; 0: unlimited."""
    max_cost_usd: float = Field(default=0.0, ge=0)
    """US dollars the session may spend (as litellm prices the model); 0: unlimited."""
    max_wall_s: float = Field(default=0.0, ge=0)
    """Wall-clock seconds the session may run; 0: unlimited."""


class DockerConfig(Section):
    """`[sandbox.docker]`: the docker runtime."""

    base_image: str = "workbench-base:bookworm"
    """The image sandbox images are built from."""
    image_prefix: str = "workbench-sandbox"
    """Name prefix of the images workbench builds."""
    memory: str = Field(
        default="",
        pattern=r"^(\d+[bkmgBKMG]?)?$",
        json_schema_extra={"allowed": 'a size such as "512m" or "4g", or "" for no limit'},
    )
    """Memory limit of the container, e.g. "4g"; empty: no limit."""
    keep_alive: bool = False
    """Leave the container running when the session ends."""


class RemoteConfig(Section):
    """`[sandbox.remote]`: a sandbox server started elsewhere."""

    url: str = ""
    """Base URL of the sandbox server, e.g. "http://host:8000"."""
    api_key: SecretStr = SecretStr("")
    """Its bearer token. Never logged or shown."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if url and not url.startswith(("http://", "https://")):
            raise ValueError(f"{url!r} does not start with http:// or https://")
        return url


class LocalConfig(Section):
    """`[sandbox.local]`: the sandbox as a child process on this machine."""

    isolation: Isolation = "auto"
    """How the child is confined: "bwrap" (bubblewrap: system read-only, home hidden, the agent's
    processes in their own pid namespace), "none" (runs as you, sees everything you can) or
    "auto": bwrap where it works, else none with a warning."""
    agent_uid: int = Field(default=-1, ge=-1)
    """With bwrap and workbench running as root: the unprivileged uid the agent's processes run
    as (the folders it writes are idmapped, so its files stay the workspace owner's); -1: the
    first of 61000-61999 without a passwd entry; 0: root with no capabilities (it can then read
    root's files)."""


_SIZE = r"^\d+ *([kKmMgGtT]i?[bB]?|[bB])?$"


class LimitsConfig(Section):
    """`[sandbox.limits]`: what one session's sandbox may use (local and Docker runtimes)."""

    processes: int = Field(default=1024, ge=0)
    """Processes the agent may have at once (a fork bomb stops there); 0: no limit."""
    memory: str = Field(
        default="",
        pattern=r"^(\d+ *([kKmMgGtT]i?[bB]?|[bB])?)?$",
        json_schema_extra={"allowed": 'a size such as "512m" or "4g", "0" for no limit, or ""'},
    )
    """Memory of the agent's processes (beyond it the kernel kills the biggest, and the agent is
    told); empty: half the RAM, at most 8 GiB; "0": no limit."""
    tmpfs: str = Field(
        default="1g",
        pattern=_SIZE,
        json_schema_extra={"allowed": 'a size such as "256m" or "1g", or "0" for the default'},
    )
    """Size of each of /tmp, /run and /dev/shm in the sandbox (they live in RAM); "0": the
    kernel's default, half the RAM each."""


class SandboxConfig(Section):
    """`[sandbox]`: where the agent's actions run."""

    runtime: Runtime = "local"
    """Where the sandbox runs: "local" (child process), "docker" or "remote"."""
    workspace: str = ""
    """The directory the agent works in; empty: the current directory."""
    volumes: list[str] = Field(
        default_factory=list, json_schema_extra={"allowed": f"a list of {_VOLUME_HINT}"}
    )
    """Extra mounts for the docker runtime; SANDBOX_VOLUMES gives them comma-separated."""
    user_id: int = Field(default=-1, ge=-1)
    """The uid the agent runs as in a container (0: root, which can signal the server); -1:
    your own, or when you are root the workspace owner's."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables set in the sandbox (also from SANDBOX_ENV_<NAME> variables)."""
    soft_timeout_s: float = Field(default=DEFAULT_SOFT_TIMEOUT_S, gt=0, le=86_400)
    """A command that prints nothing new for this long returns to the agent, still running."""
    docker: DockerConfig = Field(default_factory=DockerConfig)
    remote: RemoteConfig = Field(default_factory=RemoteConfig)
    local: LocalConfig = Field(default_factory=LocalConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    network: NetworkMode = "allowlist"
    """What the agent's processes reach (local and Docker runtimes): "off" nothing, "on"
    everything, "allowlist" only the hosts network_allow and security.allow's net: rules name,
    through the app's proxy; another host waits while the person is asked (headless:
    headless_on_confirm)."""
    network_allow: list[str] = Field(
        default_factory=lambda: list(DEFAULT_NETWORK_ALLOW),
        json_schema_extra={"allowed": 'a list of "net:HOST" rules; HOST may hold * and ?'},
    )
    """Hosts reachable without asking under network = "allowlist": package registries and
    source hosts. Rules as in security.allow ("net:pypi.org", "net:*.githubusercontent.com")."""

    @field_validator("network", mode="before")
    @classmethod
    def _network_bool(cls, value: Any) -> Any:
        return ("on" if value else "off") if isinstance(value, bool) else value

    @field_validator("network_allow")
    @classmethod
    def _check_net_rules(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            if not rule.startswith("net:") or not rule[4:].strip():
                raise ValueError(f"bad rule {rule!r}: write net:HOST, e.g. net:pypi.org")
        return rules

    @field_validator("volumes")
    @classmethod
    def _check_volumes(cls, volumes: list[str]) -> list[str]:
        for volume in volumes:
            parts = volume.split(":")
            if (
                len(parts) not in (2, 3)
                or not parts[0]
                or not parts[1].startswith("/")
                or (len(parts) == 3 and parts[2] not in ("ro", "rw"))
            ):
                raise ValueError(f"bad volume {volume!r}")
        return volumes

    @field_validator("env")
    @classmethod
    def _check_env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name in env:
            if not _ENV_NAME.match(name):
                raise ValueError(f"bad variable name {name!r}: use letters, digits and _")
        return env


def renamed_key(key: str, value: Any, where: str) -> tuple[str, Any] | None:
    """An old key as its new one, with a warning saying to move it (None: not an old key).
    `[sandbox.local] network = true/false` is `[sandbox] network = "on"/"off"`."""
    if key != "sandbox.local.network":
        return None
    if not isinstance(value, bool):
        raise ValueError(
            f"{where}: sandbox.local.network = {value!r} is an old setting: write "
            'sandbox.network = "off", "allowlist" or "on" instead'
        )
    import logging

    new = "on" if value else "off"
    logging.getLogger("workbench.config").warning(
        "%s: sandbox.local.network = %s is read as sandbox.network = %r; write that instead "
        '(it also takes "allowlist", the default)',
        where,
        str(value).lower(),
        new,
    )
    return "sandbox.network", new


class SecurityConfig(Section):
    """`[security]`: when to ask before an action runs."""

    confirmation: ConfirmationPolicy = "risky"
    """When to ask: "always", for "risky" actions (at or above risk_threshold), or "never"."""
    risk_threshold: RiskThreshold = "HIGH"
    """The lowest risk that needs confirmation under the "risky" policy."""
    headless_on_confirm: HeadlessOnConfirm = "reject"
    """Headless, with no one to ask: "approve", "reject" (and tell the agent) or "stop"."""
    allow_escalation: bool = False
    """Headless: let `headless_on_confirm = "approve"` approve a command the agent asks to run
    outside the sandbox (escalation). Without it headless refuses every one; the TUI always
    asks the person, and no allow rule ever approves one."""
    allow: list[str] = Field(default_factory=list)
    """Rules for actions that run without asking (saved by "always allow" in the TUI): globs,
    optionally for one kind only ("run:git status*", "edit:/work/*", "ipython:*", "browse:*").
    A shell line runs without asking only if each command in it (split at ; && || | &) does."""
    ask: list[str] = Field(default_factory=list)
    """Rules for actions that are always asked about, whatever their risk (headless answers
    with headless_on_confirm); on a shell line, any one command matching asks. Deny beats ask,
    ask beats allow."""
    deny: list[str] = Field(default_factory=list)
    """Rules for actions that are always rejected; on a shell line, any one command matching
    rejects the line."""
    examples: dict[str, list[str]] = Field(
        default_factory=dict,
        json_schema_extra={"allowed": 'a table of "RULE" = ["text", "!text"] lists'},
    )
    """Texts a rule must match, checked when the config loads, keyed by the rule as written in
    allow, ask or deny; a text starting with "!" must not match. A rule that fails its own
    examples is a config error. E.g. {"run:npm test*" = ["npm test -- -x", "!npm publish"]}."""

    @field_validator("risk_threshold", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class SessionConfig(Section):
    """`[session]`: where sessions are recorded."""

    dir: str = ""
    """Directory of session logs; empty: "sessions" in the user data dir."""


class CheckpointsConfig(Section):
    """`[checkpoints]`: the workspace recorded after every step that can change files."""

    enabled: bool = True
    """Checkpoint the workspace after each shell, editor, IPython and browser action (needs
    git in the sandbox), so `workbench rewind` can undo any step."""
    max_file_mb: float = Field(default=50.0, ge=0, allow_inf_nan=False)
    """Files larger than this are left out of checkpoints (and listed as not covered)."""
    ignore: list[str] = Field(
        default_factory=lambda: [
            "node_modules/",
            ".venv/",
            "venv/",
            "__pycache__/",
            ".mypy_cache/",
            ".pytest_cache/",
            ".ruff_cache/",
            ".tox/",
            ".cache/",
            "*.pyc",
        ]
    )
    """gitignore patterns left out of checkpoints (caches, virtual environments); a rewind
    never changes or deletes what they match."""


class CondenseConfig(Section):
    """`[condense]`: keeping long sessions inside the model's context window."""

    enabled: bool = True
    """Condense older history when a request nears llm.max_input_tokens (and after the
    provider refuses one for its length); off: a too-long session ends with an LLM error."""
    threshold: float = Field(default=0.75, gt=0, le=1)
    """Condense when a request would pass this fraction of the context window."""
    target: float = Field(default=0.5, gt=0, le=1)
    """Condense down to this fraction of the context window (at most `threshold`)."""
    keep_recent_steps: int = Field(default=4, ge=1)
    """The latest steps (LLM replies with their results) always sent verbatim."""
    summarize: bool = True
    """When eliding old tool output is not enough, have the model summarise the oldest part
    (one extra call with no tools)."""


class InstructionsConfig(Section):
    """`[instructions]`: project instructions put into the system prompt."""

    enabled: bool = True
    """Read AGENTS.md at the workspace root and .openhands/microagents/repo.md."""
    max_chars: int = Field(default=20_000, ge=100)
    """The most characters of instructions (all files together) put into the prompt; the
    rest is cut with a note."""


class UIConfig(Section):
    """`[ui]`: the terminal interface."""

    theme: str = Field(default="workbench-dark", min_length=1)
    """Theme name: a file in the shipped themes/ or in the config dir's themes/."""


_MCP_NAME = re.compile(r"^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$")


class McpServerConfig(Section):
    """`[mcp.servers.NAME]`: one MCP server, started inside the sandbox: a command over stdio
    (`command`, `env`), or a URL (streamable HTTP, `headers`)."""

    command: list[str] = Field(default_factory=list)
    """The program and its arguments, as run inside the sandbox (e.g. ["npx", "-y", "pkg"])."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables for that process only (not the agent's shell); masked in logs."""
    url: str = ""
    """The server's streamable-HTTP endpoint, reached from inside the sandbox."""
    headers: dict[str, str] = Field(default_factory=dict)
    """HTTP headers sent to a URL server (e.g. Authorization); masked in logs."""
    start_timeout_s: float = Field(default=30.0, gt=0, le=600, allow_inf_nan=False)
    """Seconds starting the server and listing its tools may take."""
    read_only: list[str] = Field(default_factory=list)
    """Host files and folders a stdio server may read besides its program and scripts (which
    are made visible by themselves); a relative path is from the config file's folder."""
    writable: list[str] = Field(default_factory=list)
    """Host folders a stdio server may write (its own data); visible to it alone."""
    sandbox: bool = True
    """false: a trusted stdio server runs on the host as you, outside the sandbox."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if value and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"must be an http:// or https:// URL, got {value!r}")
        return value

    @field_validator("read_only", "writable")
    @classmethod
    def _paths(cls, value: list[str]) -> list[str]:
        if any(not path.strip() for path in value):
            raise ValueError("an empty path names nothing: give each file or folder's path")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> McpServerConfig:
        command, env, url, headers = self.command, self.env, self.url, self.headers
        if command and url:
            raise ValueError("give either command (a stdio server) or url, not both")
        if not command and not url:
            raise ValueError('give command = ["program", "arg", ...] (stdio) or url = "http..."')
        if env and not command:
            raise ValueError("env is for a stdio server (command); a URL server takes headers")
        if headers and not url:
            raise ValueError("headers are for a URL server (url); a stdio server takes env")
        if (self.read_only or self.writable or not self.sandbox) and not command:
            raise ValueError(
                "read_only, writable and sandbox are for a stdio server (command); "
                "a URL server runs elsewhere"
            )
        return self


class McpConfig(Section):
    """`[mcp]`: MCP servers whose tools the agent is offered as `mcp__SERVER__TOOL`."""

    servers: dict[str, McpServerConfig] = Field(
        default_factory=dict,
        json_schema_extra={
            "allowed": 'tables [mcp.servers.NAME] with command = [...] (and env) or url = "..."'
        },
    )
    """The servers by name (letters, digits, "-" and single "_"). Each [mcp.servers.NAME] has
    either a `command = ["program", "arg", ...]` and `env = {VAR = "value"}` (stdio; env
    reaches that process only), or a `url = "https://..."` and `headers = {Authorization =
    "..."}` (streamable HTTP); and `start_timeout_s` (30). Both are reached from inside the
    sandbox; env and header values are masked in logs. A stdio server may add
    `read_only = [...]` and `writable = [...]` (host paths only it sees) or `sandbox = false`
    (a trusted server run on the host). Relative paths start from this file's folder."""
    lazy_above: int = Field(default=30, ge=0)
    """With more MCP tools than this, the model gets one tool, `mcp`, that lists, describes and
    calls them, instead of every tool's schema in each request."""
    call_timeout_s: float = Field(default=300.0, gt=0, le=86_400, allow_inf_nan=False)
    """Seconds one MCP tool call may take; then the agent gets an error result."""

    @field_validator("servers")
    @classmethod
    def _names(cls, value: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
        for name in value:
            if not _MCP_NAME.match(name) or len(name) > 32:
                raise ValueError(
                    f"server name {name!r}: use at most 32 letters, digits, '-' and single '_' "
                    "(tools are named mcp__SERVER__TOOL)"
                )
        return value


class Config(Section):
    """The whole configuration: defaults < config file < environment < command line."""

    log_all_events: bool = False
    """Print every event in headless mode (the LOG_ALL_EVENTS variable of OpenHands)."""
    llm: LLMConfig = Field(default_factory=LLMConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    session: SessionConfig = Field(default_factory=SessionConfig)
    checkpoints: CheckpointsConfig = Field(default_factory=CheckpointsConfig)
    condense: CondenseConfig = Field(default_factory=CondenseConfig)
    instructions: InstructionsConfig = Field(default_factory=InstructionsConfig)
    ui: UIConfig = Field(default_factory=UIConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)

    _source_file: Path | None = PrivateAttr(default=None)
    _mcp_base: Path | None = PrivateAttr(default=None)
    _project_file: Path | None = PrivateAttr(default=None)
    _project_trust: Any = PrivateAttr(default=None)
    _loaded_with: Any = PrivateAttr(default=None)
    """(path, env, overrides) given to `load_config`: what `config_reload` reads again."""

    @property
    def source_file(self) -> Path | None:
        """The config file this was loaded from, if one was read."""
        return self._source_file

    @property
    def mcp_base(self) -> Path:
        """The folder relative paths of `[mcp.servers]` start from: the config file's that set
        them, else the current one."""
        return self._mcp_base or Path.cwd()

    @property
    def project_file(self) -> Path | None:
        """The project's config file whose rules were added, if one was read."""
        return self._project_file

    @property
    def project_trust(self) -> Any:
        """The project config read and whether it is trusted (a `ProjectTrust`), or None."""
        return self._project_trust

    def redacted_dict(self) -> dict[str, Any]:
        """The config as plain data with every secret (and every sandbox env value) masked."""
        data: dict[str, Any] = self.model_dump(mode="json")  # SecretStr dumps as "**********"
        env = data["sandbox"]["env"]
        data["sandbox"]["env"] = {name: "**********" for name in env}
        for server in data["mcp"]["servers"].values():
            for table in ("env", "headers"):
                server[table] = {name: "**********" for name in server[table]}
            if server.get("url"):
                server["url"] = redacted_url(server["url"])
        return data

    def redacted_digest(self) -> str:
        """sha256 of `redacted_dict()`: identifies a configuration without revealing secrets."""
        blob = json.dumps(self.redacted_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def url_secrets(url: str) -> list[str]:
    """The parts of `url` that are credentials: its password, and the values of query keys
    named like one (`api_key`, `token`, `secret`, `sig`, `auth`, `password` ...)."""
    import re
    from urllib.parse import parse_qsl, urlsplit

    parts = urlsplit(url)
    found = [parts.password or ""]
    secretish = re.compile(r"key|token|secret|sig|auth|pass|credential|session", re.IGNORECASE)
    found += [value for key, value in parse_qsl(parts.query) if secretish.search(key)]
    return [value for value in found if len(value) >= 4]


def redacted_url(url: str) -> str:
    """`url` with its password and query values masked (an API key often rides there)."""
    for secret in url_secrets(url):
        url = url.replace(secret, "**********")
    return url
