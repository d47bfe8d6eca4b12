"""Opening a session, in one place for both front ends: where the workspace and the session
logs are, which values are secret, the runtime, the log and its header, the LLM client and the
controller; and reopening a saved session from its log.

UI-free. `headless/` and `tui/` build on this and never on each other. The slow parts are
separate steps (`start_runtime`, litellm's import in `workbench.llm`) so a front end can
overlap them; `open_controller` then puts the started parts together.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.checkpoints.store import checkpoint_store_of
from workbench.config.load import PROJECT_CONFIG
from workbench.config.places import sessions_dir_of, workspace_of
from workbench.config.schema import Config, url_secrets
from workbench.session.log import (
    LoadedSession,
    Scrubber,
    SessionHeader,
    SessionLog,
    make_header,
    new_session_id,
    read,
)
from workbench.session.python_env_store import python_env_of, python_env_volume

if TYPE_CHECKING:
    from sandbox.limits import Limits
    from sandbox.runtimes.base import Runtime
    from workbench.controller.confirming import ConfirmHook
    from workbench.controller.loop import Controller
    from workbench.llm import ChatModel, LLMClient, RetryHook
    from workbench.security.net_gate import NetAsk
    from workbench.session.resume import History
    from workbench.tools.mcp import McpConnection


def secrets_of(config: Config) -> list[str]:
    """Secret values that must never be written or printed."""
    values = [
        config.llm.api_key.get_secret_value(),
        config.sandbox.remote.api_key.get_secret_value(),
    ]
    for server in config.mcp.servers.values():  # an MCP server's env, headers, URL keys
        values += [*server.env.values(), *server.headers.values()]
        values += url_secrets(server.url or "")
    return [v for v in values if v]


def scrubber_of(config: Config) -> Scrubber:
    """Masks this config's secrets in any text."""
    return Scrubber(secrets_of(config))


def runtime_options(config: Config, workspace: Path) -> dict[str, Any]:
    """Keyword arguments for `create_runtime(config.sandbox.runtime, ...)`."""
    box = config.sandbox
    options: dict[str, Any] = {"soft_timeout_s": box.soft_timeout_s}
    if box.runtime == "remote":
        options |= {"url": box.remote.url, "api_key": box.remote.api_key.get_secret_value()}
        return options
    disabled = [
        name
        for name, on in (
            ("browser", config.agent.enable_browser),
            ("jupyter", config.agent.enable_jupyter),
        )
        if not on
    ]
    options |= {"workspace": workspace, "env": dict(box.env), "disable": disabled}
    options["limits"] = limits_of(config)
    # A home folder the person confirmed: its dotfiles are protected paths too.
    options["home_like"] = bool(home_protected(workspace))
    if box.runtime == "local":
        options |= {"isolation": box.local.isolation, "network": box.network}
        options["agent_uid"] = box.local.agent_uid
        # The project's rules decide what runs without asking: the agent must not edit them.
        options |= {"read_only": [str(PROJECT_CONFIG.parent), *home_protected(workspace)]}
        from workbench.tools.mcp_paths import staged_mounts

        options |= {"mcp_mounts": staged_mounts(config, workspace)}  # shown to them alone
        options["python_env"] = python_env_of(workspace)  # the agent's pip installs go there
    else:
        docker = box.docker
        options |= {"volumes": list(box.volumes), "user_id": box.user_id, "memory": docker.memory}
        options |= {"keep_alive": docker.keep_alive, "base_image": docker.base_image}
        options |= {"image_prefix": docker.image_prefix}
        options["python_env"] = python_env_volume(workspace)
        options["network"] = box.network
    if config.checkpoints.enabled:
        options["checkpoints"] = checkpoint_store_of(workspace)
    return options


def home_protected(workspace: Path) -> list[str]:
    """In a workspace that looks like a home folder (confirmed with --workspace and --yes or
    the TUI's question), its dotfiles and dot-folders, read-only to the agent."""
    from workbench.security.home_guard import home_reasons, protected_names

    return protected_names(workspace) if home_reasons(workspace) else []


def limits_of(config: Config) -> Limits:
    """The session's limits from `[sandbox.limits]` (memory "": the default)."""
    from sandbox.limits import Limits, parse_size

    box = config.sandbox.limits
    memory = parse_size(box.memory) if box.memory else -1
    return Limits(box.processes, memory, parse_size(box.tmpfs))


def runtime_limits(runtime: Runtime) -> str | None:
    """Which limits hold in a started runtime, in one line (None: it does not say)."""
    in_force = getattr(runtime, "limits_in_force", None)  # local and Docker runtimes
    line = getattr(in_force, "line", None)
    return line() if callable(line) else None


def make_runtime(config: Config) -> Runtime:
    """The configured runtime for the configured workspace (not started)."""
    from sandbox.process_guard import make_undumpable
    from sandbox.runtimes import create_runtime

    # Before any agent process exists: an agent of our uid without CAP_SYS_PTRACE (no
    # isolation, not root) must not read the LLM key from our memory or /proc/PID/environ.
    make_undumpable()
    return create_runtime(config.sandbox.runtime, **runtime_options(config, workspace_of(config)))


async def start_runtime(runtime: Runtime) -> Runtime:
    """Start `runtime`; closed again (no process left) if the start fails or is cancelled."""
    try:
        await runtime.start()
    except BaseException:
        await runtime.close()
        raise
    return runtime


def runtime_warning(runtime: Runtime) -> str | None:
    """Why a started runtime is less isolated than it could be (local "auto" without bwrap, a
    Docker agent running as root)."""
    warning = getattr(runtime, "warning", None)  # the local and Docker runtimes have one
    return warning if isinstance(warning, str) and warning else None


def new_log(
    config: Config, parent: History | None = None, link: dict[str, Any] | None = None
) -> SessionLog:
    """A new session log (header written) in the configured sessions folder. Continuing
    `parent` (resume, branch), its header names it and the parent's stored images are brought
    along; `link` names a session it goes on from another way (`replay --continue-from`: its
    id, log, step and how), written into the header as `parent`."""
    header = make_header(
        new_session_id(),
        workspace_of(config),
        config.llm.model,
        config.redacted_dict(),
        parent_id=parent.parent_id if parent else str((link or {}).get("session_id", "")),
        parent_event=parent.upto if parent else 0,
    )
    if link is not None:
        header = SessionHeader(**header.model_dump(), parent=link)
    log = SessionLog.create(sessions_dir_of(config), header, secrets=secrets_of(config))
    if parent is not None:
        from workbench.checkpoints.restore import restore_files
        from workbench.session.resume import copy_payloads

        parent.files_restored = restore_files(
            parent.events,
            parent.parent_id,
            Path(parent.workspace),
            workspace_of(config),
            config.checkpoints,
        )
        try:
            copy_payloads(parent, log.payload_dir)
        except OSError as exc:  # only the earlier pictures are lost; the session goes on
            logging.getLogger(__name__).warning("could not bring the images along: %s", exc)
    return log


def make_llm(config: Config, on_retry: RetryHook | None = None) -> LLMClient:
    """The LLM client for `config.llm` (imports litellm if nothing did yet)."""
    from workbench.llm import LLMClient

    return LLMClient(config.llm, on_retry=on_retry)


async def start_mcp(config: Config, runtime: Runtime) -> McpConnection:
    """Start the configured MCP servers in the started sandbox and register their tools (a
    front end may do it early, beside litellm's import, and hand it to `open_controller`)."""
    from workbench.tools.mcp import connect_mcp
    from workbench.tools.registry import REGISTRY

    return await connect_mcp(config, runtime, REGISTRY)


async def open_controller(
    config: Config,
    runtime: Runtime,
    llm: ChatModel,
    log: SessionLog,
    confirm: ConfirmHook | None = None,
    mcp: McpConnection | None = None,
    net_ask: NetAsk | None = None,
) -> Controller:
    """The controller of a session whose runtime has started: it offers the tools the
    sandbox can run, and those of the MCP servers started in the sandbox (`mcp`, else started
    now; a server that did not start is reported when the run starts), and records into
    `log`."""
    from workbench.agent.instructions import load_instructions
    from workbench.agent.world import sandbox_world
    from workbench.controller.loop import Controller

    info = await runtime.info()
    if mcp is None:
        mcp = await start_mcp(config, runtime)
    # The host's copy of the workspace (the local and Docker runtimes work on it); a remote
    # sandbox's workspace is elsewhere, so its instructions are not read.
    remote = config.sandbox.runtime == "remote"
    instructions = None if remote else load_instructions(workspace_of(config), config.instructions)
    controller = Controller(
        config,
        runtime,
        llm,
        log,
        confirm=confirm,
        workspace=info.workspace,
        executors=info.executors,
        instructions=instructions,
        world=sandbox_world(config, runtime, runtime_limits(runtime)),
    )
    mcp.attach(controller)
    from workbench.security.net_gate import attach

    attach(controller, runtime, net_ask)  # the proxy asks `net_ask` (None: headless's answer)
    return controller


def reopen(path: Path) -> LoadedSession:
    """A saved session read back from its log (header, events, and what could not be read).

    Raises `SessionLogError` when the file is not a session log."""
    return read(path)
