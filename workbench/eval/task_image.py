"""A task's own Docker image, built from its `environment/Dockerfile` with no network.

"Offline" means the build may use only what is on this machine: the `FROM` image must be
local, and `RUN` steps get no network (`network_mode="none"`), so a Dockerfile that downloads
fails with the build log's last lines in the error. The tag names the folder's content, so an
unchanged task is built once; the Docker runtime then builds its sandbox image on top of it
(`sandbox/runtimes/docker_image.py`).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from sandbox.errors import SandboxError

TAG_PREFIX = "workbench-task-"


class ImageBuildError(SandboxError):
    """A task's Dockerfile could not be built (an infrastructure error, not a score)."""


def image_tag(name: str, context: Path) -> str:
    """`workbench-task-<name>:<digest of the build context>`."""
    digest = hashlib.sha256()
    for path in sorted(context.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(context)).encode() + b"\0")
            digest.update(path.read_bytes())
    slug = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"
    return f"{TAG_PREFIX}{slug[:80]}:{digest.hexdigest()[:12]}"


def ensure_task_image(name: str, dockerfile: Path) -> str:
    """The tag of the task's image, built (offline) unless it exists; ImageBuildError if not."""
    from sandbox.runtimes.docker_image import docker_client

    context = dockerfile.parent
    tag = image_tag(name, context)
    client = docker_client()
    if _exists(client, tag):
        return tag
    lines: list[str] = []
    error = ""
    try:
        for chunk in client.api.build(
            path=str(context),
            dockerfile=dockerfile.name,
            tag=tag,
            rm=True,
            forcerm=True,
            network_mode="none",
            decode=True,
            labels={"workbench.eval.task": name},
        ):
            lines += [line for line in str(chunk.get("stream", "")).splitlines() if line.strip()]
            if "error" in chunk:
                error = str(chunk["error"]).strip()
    except Exception as exc:  # the SDK's errors, a missing FROM image, a bad context
        error = f"{type(exc).__name__}: {exc}"
    if error or not _exists(client, tag):
        tail = "\n".join(lines[-15:])
        raise ImageBuildError(
            f"building the task image {tag} from {dockerfile} failed: {error or 'no image'}\n"
            f"--- last lines of the build log ---\n{tail}\n---\n"
            "The build has no network: its FROM image must be on this machine "
            "(`docker images`) and its RUN steps must not download."
        )
    return tag


def _exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return True
