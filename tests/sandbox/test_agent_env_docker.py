"""The agent's writable Python env (issue 22, item 1) on the Docker runtime: the image offers
numpy, pandas and matplotlib; `%pip install` in the kernel goes to a per-workspace volume at
/run/agent-env that the shell's `python` sees and a new container on the workspace finds again.
Real engine, offline base image."""

from __future__ import annotations

import contextlib
import secrets
import shutil
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from agent_env_support import (
    cell,
    install_and_import,
    plot_shows_an_image,
    shell,
    still_there,
    tiny_wheel,
)
from docker_support import MakeRuntime, docker_api, make_runtime, sandbox_image

from sandbox.runtimes.docker_env_volume import LABEL

__all__ = ["docker_api", "make_runtime", "sandbox_image"]  # fixtures, used by name

pytestmark = pytest.mark.docker


async def test_pip_in_the_kernel_lands_in_the_workspace_volume(
    make_runtime: MakeRuntime, docker_api: Any, tmp_path: Path
) -> None:
    volume = f"workbench-python-env-test-{secrets.token_hex(4)}"
    workspace = tmp_path / "workspace"
    tiny_wheel(workspace / "wheels")
    try:
        runtime = await make_runtime(python_env=volume)
        found = await shell(runtime, "command -v python pip; id -u; stat -c %u /run/agent-env")
        paths, (uid, owner) = found.content.split()[:2], found.content.split()[2:]
        assert paths == ["/run/agent-env/bin/python", "/run/agent-env/bin/pip"], found.content
        assert uid == owner, found.content  # the volume is the agent's
        await install_and_import(runtime, "/workspace/wheels")
        died = await cell(runtime, "import os; os._exit(1)")
        assert "restarted" in (died.note or "") + died.content, died
        await still_there(runtime)
        await plot_shows_an_image(runtime)
        await runtime.close()
        # A new container on the same workspace and volume: what was installed is there.
        again = await make_runtime(python_env=volume)
        await still_there(again)
        await again.close()
        assert docker_api.volumes.get(volume).attrs["Labels"] == {LABEL: str(workspace)}
        # Once the workspace is gone, the next Docker runtime to start removes its env.
        shutil.rmtree(workspace)
        other = await make_runtime(workspace=tmp_path / "other")
        await other.close()
        with pytest.raises(docker.errors.NotFound):
            docker_api.volumes.get(volume)
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            docker_api.volumes.get(volume).remove(force=True)
