"""Shared by the Docker tests: a running engine, the offline base image, the sandbox image.

Import the fixtures into a test module (`from docker_support import sandbox_image, ...`).
The engine and base image come from `scripts/docker-up` and `scripts/base-image` (fast when
done already); `ensure_image` builds the sandbox image once, under a file lock, so parallel
pytest-xdist workers share one build.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from sandbox.runtimes.docker import DockerRuntime
from sandbox.runtimes.docker_image import OFFLINE_BASE_IMAGE, docker_client, ensure_image

ROOT = Path(__file__).resolve().parents[2]
BASE_IMAGE = os.environ.get("WORKBENCH_TEST_BASE_IMAGE", OFFLINE_BASE_IMAGE)

MakeRuntime = Callable[..., Awaitable[DockerRuntime]]


def _script(name: str) -> None:
    done = subprocess.run(
        [str(ROOT / "scripts" / name)], capture_output=True, text=True, timeout=900
    )
    if done.returncode != 0:
        pytest.fail(
            f"scripts/{name} failed (exit {done.returncode}):\n{done.stderr[-2000:]}\n"
            'The Docker tests need a Docker engine; deselect them with -m "not docker".',
            pytrace=False,
        )


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """The sandbox image's tag, with the engine up and the image built (once per machine)."""
    if "WORKBENCH_TEST_BASE_IMAGE" not in os.environ:
        _script("docker-up")
        _script("base-image")
    return ensure_image(BASE_IMAGE)


@pytest.fixture(scope="session")
def docker_api(sandbox_image: str) -> Any:
    """A docker SDK client for looking at containers from the outside."""
    return docker_client()


def new_runtime(default_workspace: Path, **options: Any) -> DockerRuntime:
    """A DockerRuntime on the test base image (not started); `workspace=` overrides the default."""
    options.setdefault("workspace", default_workspace)
    options.setdefault("base_image", BASE_IMAGE)
    options.setdefault("memory", "1g")
    return DockerRuntime(**options)


async def close_runtime(runtime: DockerRuntime) -> None:
    """Close `runtime` and remove its container, kept alive or not."""
    runtime.keep_alive = False
    await runtime.close()


@pytest.fixture
async def make_runtime(sandbox_image: str, tmp_path: Path) -> AsyncIterator[MakeRuntime]:
    """Start a DockerRuntime on the test base image; every one is closed at teardown.

    Function-scoped: for tests that change the sandbox itself (its user, volumes, network,
    keep-alive, a killed container). A module of tests that only read from a default sandbox
    shares one instead (a `loop_scope="module"` fixture over `new_runtime`)."""
    runtimes: list[DockerRuntime] = []

    async def make(**options: Any) -> DockerRuntime:
        runtime = new_runtime(tmp_path / "workspace", **options)
        runtimes.append(runtime)
        await runtime.start()
        return runtime

    yield make
    for runtime in runtimes:
        await close_runtime(runtime)


def import_image_without_python(docker_api: Any, tag: str) -> None:
    """Make `tag` (name:latest) an image holding one file and no Python at all."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("etc/hostname")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"no\n"))
    docker_api.api.import_image_from_data(
        buffer.getvalue(), repository=tag.split(":")[0], tag="latest"
    )
