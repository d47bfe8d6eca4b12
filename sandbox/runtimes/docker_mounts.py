"""What the Docker runtime mounts and how it reaches a container: extra volumes
(`SANDBOX_VOLUMES`), and whether the engine runs beside this process or behind a socket."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.errors import SandboxError
from sandbox.runtimes.docker_image import in_container


@dataclass(frozen=True)
class Volume:
    """One extra mount: a host path at a container path, read-only or not."""

    host: str
    container: str
    read_only: bool = False

    @classmethod
    def parse(cls, spec: str) -> Volume:
        """Read "host:container[:ro|rw]"; SandboxError saying what is wrong otherwise."""
        parts = spec.strip().split(":")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1].startswith("/"):
            raise SandboxError(
                f"Bad volume {spec!r}: expected host_path:container_path[:ro|rw] with an "
                "absolute container path, e.g. /data/in:/mnt/in:ro."
            )
        mode = parts[2] if len(parts) == 3 else "rw"
        if mode not in ("ro", "rw"):
            raise SandboxError(f"Bad volume {spec!r}: the mode must be ro or rw, not {mode!r}.")
        return cls(parts[0], parts[1], mode == "ro")


def parse_volumes(volumes: str | Sequence[str]) -> list[Volume]:
    """`SANDBOX_VOLUMES` (comma-separated) or a list of specs, as `Volume`s."""
    specs = volumes.split(",") if isinstance(volumes, str) else list(volumes)
    return [Volume.parse(spec) for spec in specs if spec.strip()]


def reach_by_container_ip() -> bool:
    """Whether to reach sandboxes on their bridge address rather than a port on 127.0.0.1.

    Only for a container talking to its host's engine through the socket: the published port
    is on the host's loopback, out of reach. Docker-in-Docker (the engine runs beside us) and
    a plain host use the published port. `WORKBENCH_DOCKER_CONNECT=ip|port` decides by hand.
    """
    forced = os.environ.get("WORKBENCH_DOCKER_CONNECT", "")
    if forced in ("ip", "port"):
        return forced == "ip"
    return in_container() and not local_dockerd()


@functools.cache
def local_dockerd() -> bool:
    """Whether a Docker engine runs on this machine (beside us, not behind a socket)."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm", "rb") as comm:
                    if comm.read().strip() == b"dockerd":
                        return True
            except OSError:
                continue
    return False
