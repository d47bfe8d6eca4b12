"""The configuration's typed schema: one pydantic model per `[section]`, a docstring per key.

The docstrings are the documentation: `config.template.toml` is rendered from them
(`workbench/config/template.py`), and error messages quote the allowed values from the types.
Loading, layering and errors live in `workbench/config/load.py`.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
)

from sandbox.defaults import DEFAULT_IGNORES
from workbench.config.schema_mcp import McpConfig
from workbench.config.schema_sandbox import SandboxConfig
from workbench.config.section import ConfirmationPolicy, HeadlessOnConfirm, RiskThreshold, Section


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
    ignore: list[str] = Field(default_factory=lambda: list(DEFAULT_IGNORES))
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
