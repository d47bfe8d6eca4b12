"""`DockerRuntime`: the sandbox server in a Docker container, reached over a port on 127.0.0.1.

The image comes from `docker_image.ensure_image` (built once, offline, tagged by content). The
container mounts the workspace at /workspace plus `SANDBOX_VOLUMES` and runs the agent as the
host user (files the agent creates belong to you, not root), apart from the server, which keeps
root as its real uid so the agent can neither signal nor read it (`docker_entry.py`,
`sandbox/confine.py`). It is removed on close, stops by itself when this process dies (a stdin
lifeline), or is kept running for the next session (`keep_alive`, found again by name).
`ServerRuntime` restarts a container that died. The docker SDK is blocking: its calls run in a
worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sandbox.agent_env import AGENT_ENV
from sandbox.client import SandboxClient
from sandbox.errors import SandboxConnectionError, SandboxError, SandboxRequestError
from sandbox.executors.checkpoints import CheckpointExecutor, on_store
from sandbox.limits import Limits, docker_in_force, docker_options
from sandbox.net_bridge import PROXY_DIR, PROXY_SOCKET, proxy_env
from sandbox.net_proxy import NetProxy, NetworkMode, network_mode
from sandbox.protocol import Action, CheckpointAction, Observation, RestoreAction
from sandbox.runtimes import docker_container, docker_env_volume, docker_idmap, leftovers
from sandbox.runtimes.base import ServerRuntime
from sandbox.runtimes.docker_entry import ROOT_AGENT_WARNING
from sandbox.runtimes.docker_image import (
    DEFAULT_BASE_IMAGE,
    DEFAULT_IMAGE_PREFIX,
    docker_client,
    ensure_image,
    in_container,
    log,
)
from sandbox.runtimes.docker_mounts import (
    local_dockerd,
    parse_volumes,
    reach_by_container_ip,
)
from sandbox.runtimes.docker_network import network_options, start_proxy, stop_proxy
from sandbox.runtimes.host_guard import HostGuard

SERVER_PORT = 8000
LABEL = leftovers.CONTAINER_LABEL
"""Every container we start carries this label (value "1"), so stale ones can be found."""
START_TIMEOUT_S = 60.0


class DockerRuntime(ServerRuntime):
    """The sandbox server in a container of the sandbox image, one container per session."""

    name = "docker"

    def __init__(
        self,
        workspace: Path | str,
        volumes: str | Sequence[str] = (),
        user_id: int | None = None,
        env: Mapping[str, str] | None = None,
        memory: str | None = None,
        name_prefix: str = "workbench-sandbox-",
        keep_alive: bool = False,
        base_image: str = DEFAULT_BASE_IMAGE,
        image_prefix: str = DEFAULT_IMAGE_PREFIX,
        soft_timeout_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        disable: Sequence[str] = (),
        checkpoints: Path | None = None,
        limits: Limits | None = None,
        home_like: bool = False,
        python_env: str | None = None,
        network: bool | str = True,
    ) -> None:
        super().__init__(soft_timeout_s=soft_timeout_s)
        self.network: NetworkMode = network_mode(network)
        self.net_proxy = NetProxy() if self.network == "allowlist" else None  # docker_network.py
        self._net_dir: Path | None = None
        self.workspace = str(workspace) if in_container() else str(Path(workspace).resolve())
        self.volumes = parse_volumes(volumes)
        self.user_id, self.group_id = _agent_ids(user_id)
        self.warning: str | None = None
        """Why the agent is less isolated than it could be (it runs as root), or None."""
        self.env = dict(env or {})
        self.limits = (limits or Limits()).resolved()
        """The session's limits (0: none): Docker's pids limit, memory limit and tmpfs sizes."""
        self.memory = memory or (str(self.limits.memory) if self.limits.memory else None)
        """The container's memory limit ("4g"; bytes as text): `memory`, else the limits'."""
        self.limits_in_force = docker_in_force(self.limits, self.memory)
        """Which limits hold: all three, by Docker."""
        self.name_prefix = name_prefix
        self.keep_alive = keep_alive
        self.base_image = base_image
        self.image_prefix = image_prefix
        self.progress = progress
        self.disable = tuple(disable)
        self.checkpoints = checkpoints
        """The workspace's checkpoint store on the host (None: one inside the container, gone
        with it). Never mounted: checkpoints run here, on the host, so the agent cannot plant
        anything in the store that `workbench rewind` would later follow."""
        self._host_checkpoints: CheckpointExecutor | None = None
        self.home_like = home_like
        """The workspace is a home folder: its root dotfiles are protected paths too."""
        self.python_env = python_env
        """A Docker volume for the agent's Python env at `AGENT_ENV` (kept for the workspace;
        None: one inside the container, gone with it); see `sandbox/agent_env.py`."""
        self.host_guard: HostGuard | None = None
        """The app's own check of the protected paths (`host_guard.py`); None when the engine
        does not see our paths (this process in a container, the engine elsewhere)."""
        if (not in_container() or local_dockerd()) and Path(self.workspace).is_absolute():
            self.host_guard = HostGuard(Path(self.workspace), home_like, str(os.getpid()))
        self.image: str | None = None
        self.container_name: str | None = None
        self._docker: Any = None
        self._container: Any = None
        self._lifeline: Any = None

    async def execute(self, action: Action) -> Observation:
        """Run `action` in the container; checkpoints and restores run on the host, on a store
        the container never sees."""
        store = self.checkpoints
        if (
            store
            and self.state != "closed"
            and isinstance(action, CheckpointAction | RestoreAction)
        ):
            if self._host_checkpoints is None:
                self._host_checkpoints = CheckpointExecutor(
                    on_store(store, Path(self.workspace), reread=True)
                )
            return await asyncio.to_thread(self._host_checkpoints.execute, action)
        return await super().execute(action)

    async def close(self) -> None:
        """Stop the container (see `ServerRuntime.close`), neutralise what the agent left under
        protected paths, then drop this session's index."""
        await super().close()
        await stop_proxy(self.net_proxy, self._net_dir)
        if self.host_guard is not None:
            await asyncio.to_thread(self.host_guard.check)  # a walk: off the event loop
        checkpoints, self._host_checkpoints = self._host_checkpoints, None
        if checkpoints is not None:
            await asyncio.to_thread(checkpoints.close)

    # ------------------------------------------------------------------ ServerRuntime hooks

    async def _launch(self) -> SandboxClient:
        import docker.errors

        if self.host_guard is not None:
            await asyncio.to_thread(self.host_guard.check)  # a walk: off the event loop
        if self.net_proxy is not None and self._net_dir is None:  # once: it outlives restarts
            self._net_dir = await start_proxy(self.net_proxy)
        try:
            return await self._launch_container()
        except (docker.errors.DockerException, OSError) as exc:
            raise SandboxError(
                f"Docker failed while starting the sandbox: {exc}. Is the engine still "
                "running? (`docker version`; `scripts/docker-up` or `sudo systemctl start docker`)"
            ) from exc

    async def _launch_container(self) -> SandboxClient:
        if self._docker is None:
            self._docker = await asyncio.to_thread(docker_client)
        for attempt in (1, 2):
            if self.image is None:
                self.image = await asyncio.to_thread(
                    ensure_image, self.base_image, self.image_prefix, self.progress, self._docker
                )
            try:
                container, token = await asyncio.to_thread(self._container_for_session)
                break
            except _ImageGone:
                # A newer build (the sandbox package changed) replaced our tag meanwhile.
                self.image = None
                if attempt == 2:
                    raise SandboxError(
                        "The sandbox image disappeared twice while starting."
                    ) from None
        self._container = container
        self.container_name = str(container.name)
        client = await self._connect(container, token)
        self.warning = await asyncio.to_thread(self._root_warning, container)
        return client

    async def _terminate(self) -> None:
        container, self._container = self._container, None
        lifeline, self._lifeline = self._lifeline, None
        if container is None:
            docker_container.close_quietly(lifeline)
            return
        if self.state == "closed" and self.keep_alive:
            return
        await asyncio.to_thread(docker_container.remove, container)
        docker_container.close_quietly(lifeline)

    def _alive(self) -> bool:
        # Asking the engine before every action would cost more than the action; a dead
        # container shows up as a refused connection, which ServerRuntime handles.
        return True

    def _describe_failure(self) -> str:
        name = self.container_name or f"{self.name_prefix}*"
        return f"See `docker logs {name}` and `docker ps -a --filter label={LABEL}`."

    # ------------------------------------------------------------------ containers

    def _config_digest(self) -> str:
        parts = [
            self.image or "",
            self.workspace,
            *(f"{v.host}:{v.container}:{v.read_only}" for v in self.volumes),
            str(self.user_id),
            str(self.group_id),
            "lifeline" if not self.keep_alive else "kept",
            "checkpoints on the host",  # a container that mounted the store is not reused
            f"python env {self.python_env}",
            f"network {self.network} {self._net_dir or ''}",  # a kept one binds this proxy
            *(f"{k}={v}" for k, v in sorted(self.env.items())),
            str(self.memory),
            f"{self.limits.processes}:{self.limits.tmpfs}",
            *self.disable,
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]

    def _container_for_session(self) -> tuple[Any, str]:
        """Reattach to a kept-alive container with the same setup, or create a new one."""
        import docker.errors

        self._remove_stale()
        digest = self._config_digest()
        if self.keep_alive:
            name = f"{self.name_prefix}{hashlib.sha256(self.workspace.encode()).hexdigest()[:12]}"
            try:
                found = self._docker.containers.get(name)
            except docker.errors.NotFound:
                found = None
            if found is not None:
                if found.labels.get(f"{LABEL}.config") == digest:
                    token = found.labels.get(f"{LABEL}.token", "")
                    if found.status != "running":
                        docker_container.put_token(
                            found, token
                        )  # the entry point consumed the last one
                        found.start()
                        found.reload()
                    return found, token
                docker_container.remove(found)
        else:
            name = f"{self.name_prefix}{secrets.token_hex(6)}"
        token = secrets.token_urlsafe(24)
        return self._create(name, token, digest), token

    def _create(self, name: str, token: str, digest: str) -> Any:
        import docker.errors

        if not in_container():
            Path(self.workspace).mkdir(parents=True, exist_ok=True)
            for volume in self.volumes:
                if not Path(volume.host).exists():
                    raise SandboxError(
                        f"The volume's host path {volume.host!r} does not exist; create it or "
                        "fix SANDBOX_VOLUMES / [sandbox] volumes."
                    )
        # A root-owned workspace reaches a non-root agent through an idmapped mount.
        shown, agent_uid = docker_idmap.workspace_for_agent(
            Path(self.workspace), self.user_id is not None or self.keep_alive
        )
        mounts = {str(shown): {"bind": "/workspace", "mode": "rw"}}
        # The person's .git bound over itself (it cannot be renamed), the protected paths that
        # exist (.git/config, hooks ...) read-only over the workspace.
        guard = self.host_guard
        over: list[tuple[Path, str]] = []
        if guard is not None:
            over = [(p, "rw") for p in guard.pinned()] + [(p, "ro") for p in guard.existing()]
        for path, mode in over:
            inside = path.relative_to(self.workspace).as_posix()
            # From the workspace as the agent is shown it (idmapped or not), so a pinned .git
            # stays writable for a non-root agent.
            mounts[str(shown / inside)] = {"bind": f"/workspace/{inside}", "mode": mode}
        for volume in self.volumes:
            host = volume.host if in_container() else str(Path(volume.host).resolve())
            mounts[host] = {"bind": volume.container, "mode": "ro" if volume.read_only else "rw"}
        if self.python_env:  # a named volume: the entry point hands it to the agent's uid
            docker_env_volume.ensure_volume(self._docker, self.python_env, self.workspace)
            mounts[self.python_env] = {"bind": AGENT_ENV, "mode": "rw"}
        if self._net_dir is not None:  # read-only: the agent cannot swap the socket
            mounts[str(self._net_dir)] = {"bind": PROXY_DIR, "mode": "ro"}
        # The token goes in as a root-only file the entry point reads and deletes before the
        # server starts (docker_entry.py), not as SANDBOX_TOKEN: /proc/PID/environ of the
        # container's init would show it to an agent of the same uid for the container's life.
        # The label lets a later session reattach; only the host's Docker sees labels.
        environment = {
            **self.env,
            "SANDBOX_USER_ID": "workspace" if self.user_id is None else str(self.user_id),
            "SANDBOX_GROUP_ID": "" if self.group_id is None else str(self.group_id),
        }
        if agent_uid:
            environment |= {"SANDBOX_USER_ID": str(agent_uid), "SANDBOX_GROUP_ID": str(agent_uid)}
        environment |= proxy_env() if self.net_proxy is not None else {}
        labels = {
            LABEL: "1",
            f"{LABEL}.config": digest,
            f"{LABEL}.workspace": self.workspace,
            f"{LABEL}.keep_alive": "1" if self.keep_alive else "0",
            f"{LABEL}.owner": leftovers.owner_label(),
            f"{LABEL}.token": token,
        }
        try:
            command = ["serve", "--host", "0.0.0.0", "--port", str(SERVER_PORT)]
            command += ["--workspace", "/workspace", "--python-env", AGENT_ENV]
            for executor in self.disable:
                command += ["--disable", executor]
            if self.home_like:
                command.append("--home-like")
            command += ["--net-bridge", PROXY_SOCKET] if self.net_proxy is not None else []
            if not self.keep_alive:
                command.append("--watch-stdin")  # the lifeline: see _attach_lifeline
            container = self._docker.containers.create(
                self.image,
                command=command,
                name=name,
                init=True,
                # With stdin open (and not detached) the SDK sets StdinOnce: the engine
                # closes stdin when the first attachment ends (_attach_lifeline).
                stdin_open=not self.keep_alive,
                environment=environment,
                volumes=mounts,
                labels=labels,
                mem_limit=self.memory,
                **docker_options(self.limits),
                **network_options(self._docker, self.network, SERVER_PORT),
            )
            try:
                docker_container.put_token(container, token)
                if not self.keep_alive:
                    self._attach_lifeline(container)
                container.start()
            except BaseException:
                docker_container.remove(container)
                raise
            return container
        except docker.errors.ImageNotFound as exc:
            raise _ImageGone(str(exc)) from exc
        except docker.errors.DockerException as exc:
            raise SandboxError(
                f"Docker could not start the sandbox container {name}: {exc}"
            ) from exc
        finally:
            if shown != Path(self.workspace):  # the container holds its own mount now
                docker_idmap.release(shown)

    def _attach_lifeline(self, container: Any) -> None:
        """Hold the container's stdin open from this process until the session ends.

        With `stdin_once` the engine closes the container's stdin when this attachment ends,
        which happens however this process ends (a SIGKILL too: the kernel closes the socket).
        The server (`--watch-stdin`) then shuts down, the container's init exits, and the
        agent's processes die with the container's pid namespace. The stopped container is
        removed at the next start of any runtime (`leftovers.py`).
        """
        old, self._lifeline = self._lifeline, None
        docker_container.close_quietly(old)
        self._lifeline = container.attach_socket(params={"stdin": 1, "stream": 1})

    def _root_warning(self, container: Any) -> str | None:
        """The warning when the agent runs as root in `container` (which has started), else
        None. Without a configured uid the entry point decided, and its log says so."""
        if self.user_id is None:
            logs = container.logs(stdout=False, stderr=True, tail=50)
            as_root = ROOT_AGENT_WARNING.encode() in logs
        else:
            as_root = self.user_id == 0
        if not as_root:
            return None
        return (
            "The Docker sandbox runs the agent as root (sandbox.user_id / SANDBOX_USER_ID is 0 "
            "or the workspace belongs to root): it can signal the sandbox server and write "
            "anywhere in the container. Set SANDBOX_USER_ID to a non-root uid to keep it apart."
        )

    def _remove_stale(self) -> None:
        """Remove what apps that died left: our containers no session will use again (their
        owner is gone) and local runtimes' temp folders (`leftovers.py`)."""
        leftovers.sweep_folders()
        if self.host_guard is not None:  # the workspaces' paths are this machine's
            docker_env_volume.remove_orphans(self._docker)
        for container in self._docker.containers.list(
            all=True,
            filters={"label": LABEL},
            ignore_removed=True,  # another app may remove one
        ):
            if leftovers.container_is_leftover(container.labels, container.status):
                log.info("removing stale sandbox container %s", container.name)
                docker_container.remove(container)

    def _address(self, container: Any) -> tuple[str, int]:
        container.reload()
        if reach_by_container_ip() or self.network != "on":
            networks = container.attrs["NetworkSettings"]["Networks"]
            ip = next((n["IPAddress"] for n in networks.values() if n.get("IPAddress")), "")
            if ip:
                return ip, SERVER_PORT
        bindings = (container.attrs["NetworkSettings"]["Ports"] or {}).get(f"{SERVER_PORT}/tcp")
        if not bindings:
            raise SandboxError(
                f"The sandbox container {container.name} is {container.status} and publishes "
                f"no port.\n{docker_container.logs_tail(container)}"
            )
        return "127.0.0.1", int(bindings[0]["HostPort"])

    async def _connect(self, container: Any, token: str) -> SandboxClient:
        """Wait until the server in `container` answers; SandboxError with its logs if not."""
        import docker.errors

        deadline = time.monotonic() + START_TIMEOUT_S
        host, port = await asyncio.to_thread(self._address, container)
        client = SandboxClient(f"http://{host}:{port}", token, connect_timeout_s=5.0)
        next_check = time.monotonic() + 1.0
        while True:
            try:
                await client.health()
                return client
            except SandboxRequestError as exc:
                await client.close()
                raise SandboxError(f"The sandbox server in {container.name} failed: {exc}") from exc
            except SandboxConnectionError:
                pass
            now = time.monotonic()
            if now > next_check or now > deadline:
                next_check = now + 1.0
                try:
                    await asyncio.to_thread(container.reload)
                except docker.errors.NotFound as exc:
                    await client.close()
                    raise SandboxError(
                        f"The sandbox container {container.name} was removed while starting."
                    ) from exc
                if container.status != "running" or now > deadline:
                    await client.close()
                    logs = await asyncio.to_thread(docker_container.logs_tail, container)
                    why = "did not answer in time" if container.status == "running" else "exited"
                    raise SandboxError(
                        f"The sandbox server in container {container.name} {why} "
                        f"(status {container.status}).\n{logs}"
                    )
            await asyncio.sleep(0.02)


class _ImageGone(Exception):
    """The image tag we were given was removed before the container was created."""


def _agent_ids(user_id: int | None) -> tuple[int | None, int | None]:
    """The agent's uid and gid: the configured uid (its own number as gid), else ours, else
    (we are root) None, None: the workspace's owner, which the entry point reads."""
    if user_id is not None and user_id >= 0:
        return user_id, os.getgid() if user_id == os.getuid() else user_id
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    return None, None
