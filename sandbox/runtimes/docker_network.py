"""The Docker runtime's network policy: where the container is attached, and the proxy.

"on": Docker's default bridge, the server's port published on 127.0.0.1 (as before).
"off" and "allowlist": the `workbench-internal` network, created `internal` (Docker gives it
no route out: no other machine is reached) and this process reaches the server on the
container's address. Under "allowlist" the app's proxy (`sandbox/net_proxy.py`) listens on a
unix socket in a folder of this machine bound read-only into the container (the agent can
neither replace nor move it), and the server forwards 127.0.0.1:3128 to it
(`sandbox/net_bridge.py`), the port HTTP_PROXY and HTTPS_PROXY name.

Known limit: the host itself stays reachable from the internal network on its own addresses
(Docker's bridge gateway): a service of this machine listening on all addresses answers the
agent, as it does on the default bridge. Closing that needs a packet filter in the container
or the server on a unix socket too (`network_mode="none"`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from sandbox.errors import SandboxError
from sandbox.net_proxy import NetProxy, NetworkMode
from sandbox.runtimes import leftovers
from sandbox.runtimes.docker_image import in_container
from sandbox.runtimes.docker_mounts import local_dockerd

INTERNAL_NETWORK = "workbench-internal"
"""The Docker network of sandboxes whose network is "off" or "allowlist"."""


def network_options(client: Any, mode: NetworkMode, server_port: int) -> dict[str, Any]:
    """`containers.create` options for `mode` (the internal network made if missing)."""
    if mode == "on":
        return {"ports": {f"{server_port}/tcp": ("127.0.0.1", None)}}
    import docker.errors

    try:
        client.networks.get(INTERNAL_NETWORK)
    except docker.errors.NotFound:
        try:
            labels = {leftovers.CONTAINER_LABEL: "1"}
            client.networks.create(INTERNAL_NETWORK, driver="bridge", internal=True, labels=labels)
        except docker.errors.APIError as exc:  # another app made it meanwhile
            if "already exists" not in str(exc):
                raise
    return {"network": INTERNAL_NETWORK}


async def start_proxy(proxy: NetProxy) -> Path:
    """Start `proxy` on a unix socket in a new folder to bind into the container; the folder."""
    if in_container() and not local_dockerd():
        raise SandboxError(
            'network = "allowlist" with Docker needs the engine to see this machine\'s folders '
            '(the proxy\'s socket is bound in): use network = "on" or "off" here'
        )
    folder = tempfile.mkdtemp(prefix="wb-docker-net-")
    os.chmod(folder, 0o755)
    await proxy.listen_unix(os.path.join(folder, "proxy.sock"))
    return Path(folder)


async def stop_proxy(proxy: NetProxy | None, folder: Path | None) -> None:
    """Stop `proxy` and remove its folder."""
    if proxy is not None:
        await proxy.close()
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)
