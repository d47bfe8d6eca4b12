"""Build (or reuse) the Docker sandbox image: a base image with Python >= 3.11 plus a venv
installed offline from the host's wheelhouse. The tag is a hash of everything that went in
(base image id, wheel digests, Dockerfile text), so an unchanged setup never rebuilds.

The docker SDK is imported lazily: importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from sandbox.errors import SandboxError
from sandbox.runtimes.wheelhouse import (
    PythonTarget,
    build_sandbox_wheel,
    build_wheelhouse,
    cache_dir,
    file_digest,
    file_lock,
    pinned_requirements,
)

DEFAULT_BASE_IMAGE = "python:3.12-slim"
"""For users: an official slim Python image (pulled once from Docker Hub)."""
OFFLINE_BASE_IMAGE = "workbench-base:bookworm"
"""Made by `scripts/base-image` with debootstrap, no registry needed (our CI uses it)."""
DEFAULT_IMAGE_PREFIX = "workbench-sandbox"
VENV = "/opt/sandbox"
IMAGE_LABEL = "workbench.sandbox-image"

log = logging.getLogger("sandbox.docker")
Progress = Callable[[str], None]

# Two stages so that the wheels never land in a layer of the final image, and the layer with
# the dependencies is reused from Docker's cache when only the sandbox package changed.
_DOCKERFILE = """\
FROM {base} AS deps
COPY wheels /wheels
RUN python3 -m venv {venv} \\
 && {venv}/bin/python -m pip install --no-index --find-links /wheels --no-cache-dir \\
        --disable-pip-version-check --progress-bar off {requirements}

FROM {base}
COPY --from=deps {venv} {venv}
COPY sandbox-wheel /tmp/sandbox-wheel
RUN {venv}/bin/python -m pip install --no-index --no-deps --no-cache-dir \\
        --disable-pip-version-check /tmp/sandbox-wheel/*.whl && rm -rf /tmp/sandbox-wheel
WORKDIR /workspace
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["{venv}/bin/python", "-P", "-m", "sandbox.runtimes.docker_entry"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000", "--workspace", "/workspace"]
"""

_PROBE = (
    "import sys, platform, json\n"
    "try:\n    import venv, ensurepip; has_venv = True\n"
    "except ImportError:\n    has_venv = False\n"
    "print(json.dumps({'version': list(sys.version_info[:3]), 'machine': platform.machine(),"
    " 'libc': list(platform.libc_ver()), 'venv': has_venv}))"
)

_DOCKER_HINT = (
    "Start it with `scripts/docker-up` (installs docker.io if needed and starts dockerd) or "
    "`sudo systemctl start docker`; check with `docker version`. "
    "Or use another runtime: --runtime local."
)


def docker_client(timeout: int = 120) -> Any:
    """A connected docker SDK client, or SandboxError saying how to get a Docker engine."""
    try:
        import docker
        import docker.errors
    except ImportError as exc:  # pragma: no cover - docker is a dependency of workbench
        raise SandboxError("The docker Python package is missing: pip install docker") from exc
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        if not (shutil.which("docker") or shutil.which("dockerd")):
            raise SandboxError(
                f"Docker does not seem to be installed (no `docker` on PATH; {where} does not "
                "answer). Install it (Debian/Ubuntu: `sudo apt-get install docker.io`; in a "
                "workbench checkout `scripts/docker-up` does it and starts the engine), or use "
                "--runtime local."
            ) from exc
        raise SandboxError(
            f"Cannot reach the Docker engine at {where}: {_short(exc)}. {_DOCKER_HINT}"
        ) from exc
    except OSError as exc:
        raise SandboxError(
            f"Cannot reach the Docker engine at {where}: {exc}. {_DOCKER_HINT}"
        ) from exc
    return client


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[-1][:300] if text else type(exc).__name__


def base_image_id(client: Any, base_image: str, progress: Progress) -> str:
    """The id of `base_image`, pulled if absent; SandboxError if it cannot be had."""
    import docker.errors

    try:
        return str(client.images.get(base_image).id)
    except docker.errors.ImageNotFound:
        pass
    progress(f"Pulling base image {base_image}...")
    try:
        return str(client.images.pull(base_image).id)
    except docker.errors.DockerException as exc:
        raise SandboxError(
            f"The base image {base_image!r} is not on this machine and could not be pulled "
            f"({_short(exc)}). Without a registry, build the offline one with "
            f"`scripts/base-image` and set [sandbox.docker] base_image = "
            f'"{OFFLINE_BASE_IMAGE}"; or `docker pull {base_image}` where a registry is reachable.'
        ) from exc


def _read_probe(path: Path) -> dict[str, Any] | None:
    """A cached probe result, or None when there is none (or it cannot be read)."""
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def probe_python(client: Any, base_image: str, image_id: str) -> PythonTarget:
    """The Python of a base image (cached by image id); SandboxError if it has none >= 3.11."""
    import docker.errors

    cached = cache_dir() / "probes" / f"{image_id.replace(':', '-')}.json"
    found = _read_probe(cached)
    if found is None:
        try:
            found = json.loads(_run_probe(client, image_id).strip().splitlines()[-1])
        except (
            docker.errors.ContainerError,
            docker.errors.APIError,
            OSError,  # requests: a probe that hangs past its timeout
            ValueError,
            IndexError,
        ) as exc:
            raise SandboxError(
                f"The base image {base_image!r} has no working `python3` ({_short(exc)}). The "
                "sandbox needs a glibc-based image with Python >= 3.11 and its venv module, e.g. "
                f'"{DEFAULT_BASE_IMAGE}", or "{OFFLINE_BASE_IMAGE}" built by `scripts/base-image`.'
            ) from exc
    version = (int(found["version"][0]), int(found["version"][1]))
    if version < (3, 11):
        raise SandboxError(
            f"The base image {base_image!r} has Python {version[0]}.{version[1]}; the sandbox "
            f'needs Python >= 3.11. Use e.g. "{DEFAULT_BASE_IMAGE}" or "{OFFLINE_BASE_IMAGE}".'
        )
    libc, libc_version = found["libc"]
    if libc != "glibc":
        raise SandboxError(
            f"The base image {base_image!r} is not glibc-based ({libc or 'unknown libc'}); the "
            f'sandbox\'s wheels need glibc (Debian/Ubuntu based, e.g. "{DEFAULT_BASE_IMAGE}").'
        )
    if not found["venv"]:
        raise SandboxError(
            f"The base image {base_image!r} has Python {version[0]}.{version[1]} without the venv "
            "module; install it in the image (Debian: python3-venv) or use "
            f'"{DEFAULT_BASE_IMAGE}".'
        )
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(found))
    os.replace(partial, cached)  # whole or absent: parallel builds read it at any moment
    major, minor = (int(part) for part in libc_version.split(".")[:2])
    micro = int(found["version"][2]) if len(found["version"]) > 2 else 0
    return PythonTarget(version, found["machine"], (major, minor), micro)


def _run_probe(client: Any, image_id: str) -> str:
    """The probe's output; the container is removed even when it could not start."""
    import docker.errors

    container = client.containers.create(
        image_id, command=None, entrypoint=["python3", "-c", _PROBE], network_disabled=True
    )
    try:
        container.start()
        status = container.wait(timeout=60)
        output = container.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        if status.get("StatusCode") != 0:
            raise docker.errors.ContainerError(
                container, status.get("StatusCode"), "python3 -c <probe>", image_id, output
            )
        return str(output)
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)


def ensure_image(
    base_image: str = DEFAULT_BASE_IMAGE,
    image_prefix: str = DEFAULT_IMAGE_PREFIX,
    progress: Progress | None = None,
    client: Any = None,
    no_cache: bool = False,
) -> str:
    """The tag of the sandbox image for `base_image`, built first if it does not exist yet.

    `no_cache` builds every layer again (for measuring a first build).
    """
    say = progress or log.info
    client = client or docker_client()
    image_id = base_image_id(client, base_image, say)
    target = probe_python(client, base_image, image_id)
    wheels, wheels_digest = build_wheelhouse(target, say)
    requirements = " ".join(f"'{req}'" for req in pinned_requirements())
    dockerfile = _DOCKERFILE.format(base=base_image, venv=VENV, requirements=requirements)
    with tempfile.TemporaryDirectory(prefix="workbench-sandbox-wheel-") as tmp:
        own_wheel = build_sandbox_wheel(Path(tmp))
        parts = [image_id, wheels_digest, file_digest(own_wheel), dockerfile]
        tag = f"{image_prefix}:{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()[:16]}"
        if _image_exists(client, tag):
            return tag
        with file_lock(cache_dir() / "images" / f".{tag.replace(':', '-')}.lock"):
            if not _image_exists(client, tag):
                _build(
                    client,
                    tag,
                    base_image,
                    dockerfile,
                    sorted(wheels.glob("*.whl")),
                    own_wheel,
                    say,
                    no_cache,
                )
    return tag


def _image_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True


def _context(dockerfile: str, wheels: list[Path], own_wheel: Path, out: IO[bytes]) -> None:
    with tarfile.open(fileobj=out, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for wheel in wheels:
            tar.add(wheel, arcname=f"wheels/{wheel.name}")
        tar.add(own_wheel, arcname=f"sandbox-wheel/{own_wheel.name}")
    out.seek(0)


def _build(
    client: Any,
    tag: str,
    base_image: str,
    dockerfile: str,
    wheels: list[Path],
    own_wheel: Path,
    say: Progress,
    no_cache: bool = False,
) -> None:
    import docker.errors

    say(f"Building sandbox image {tag} from {base_image} ({len(wheels)} wheels)...")
    lines: list[str] = []
    error = ""
    with tempfile.TemporaryFile() as context:
        _context(dockerfile, wheels, own_wheel, context)
        try:
            for chunk in client.api.build(
                fileobj=context,
                custom_context=True,
                tag=tag,
                rm=True,
                forcerm=True,
                nocache=no_cache,
                decode=True,
                labels={IMAGE_LABEL: "1", "workbench.base": base_image, BUILDER_LABEL: _builder()},
            ):
                for line in str(chunk.get("stream", "")).splitlines():
                    if line.strip():
                        lines.append(line)
                        say(line)
                if "error" in chunk:
                    error = str(chunk.get("error", "")).strip()
                    lines.append(error)
        except (docker.errors.DockerException, OSError) as exc:
            error = _short(exc)
            lines.append(error)
    if error or not _image_exists(client, tag):
        tail = "\n".join(lines[-20:])
        raise SandboxError(
            f"Building the sandbox image {tag} from {base_image!r} failed: {error}\n"
            f"--- last lines of the build log ---\n{tail}\n---\n"
            "Check that the base image has Python >= 3.11 with venv and pip (ensurepip), that "
            "the disk is not full (`docker system df`), then retry; the wheelhouse in "
            f"{cache_dir() / 'wheelhouse'} can be deleted to fetch the wheels again."
        )
    say(f"Built sandbox image {tag}")
    _remove_older(client, tag)


BUILDER_LABEL = "workbench.builder"


def in_container() -> bool:
    """True when this process itself runs in a container (sibling containers via the socket)."""
    return Path("/.dockerenv").exists() or os.environ.get("WORKBENCH_IN_DOCKER") == "1"


def _builder() -> str:
    """Who builds: the host, or an app container. Their wheel sets differ (each resolves its
    own), so each must leave the other's image alone or they would rebuild it by turns."""
    return "container" if in_container() else "host"


def _remove_older(client: Any, keep: str) -> None:
    """Untag the sandbox images this build replaces: same name, same kind of builder (not
    those a container still uses)."""
    import docker.errors

    repository = keep.rsplit(":", 1)[0]
    mine = {"label": [IMAGE_LABEL, f"{BUILDER_LABEL}={_builder()}"]}
    for image in client.images.list(name=repository, filters=mine):
        for tag in image.tags:
            if tag != keep and tag.rsplit(":", 1)[0] == repository:
                # A container (a kept-alive sandbox) may still use it: then it stays.
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(tag, noprune=False)


def main(argv: list[str] | None = None) -> int:
    """`python -m sandbox.runtimes.docker_image [--base-image IMAGE]`: build, print the tag."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m sandbox.runtimes.docker_image",
        description="Build (or reuse) the sandbox image and print its tag.",
    )
    parser.add_argument("--base-image", default=DEFAULT_BASE_IMAGE)
    parser.add_argument("--image-prefix", default=DEFAULT_IMAGE_PREFIX)
    args = parser.parse_args(argv)
    try:
        tag = ensure_image(
            args.base_image, args.image_prefix, progress=lambda line: print(line, file=sys.stderr)
        )
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
