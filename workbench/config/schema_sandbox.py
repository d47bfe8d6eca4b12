"""The `[sandbox]` section and its tables: runtime, isolation, limits, network, Docker, remote.

Part of the schema (`schema.py` puts the sections together); the docstrings are the docs.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import (
    Field,
    SecretStr,
    field_validator,
)

from sandbox.defaults import DEFAULT_SOFT_TIMEOUT_S
from workbench.config.section import Isolation, NetworkMode, Runtime, Section

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
    logging.getLogger("workbench.config.load").warning(
        "%s: sandbox.local.network = %s is read as sandbox.network = %r; write that instead "
        '(it also takes "allowlist", the default)',
        where,
        str(value).lower(),
        new,
    )
    return "sandbox.network", new
