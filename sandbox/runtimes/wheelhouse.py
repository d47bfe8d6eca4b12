"""The wheels the Docker sandbox image installs from, built on the host and cached by hash.

Containers here (and behind many company proxies) cannot reach the package index, so nothing
is downloaded inside the image build: `pip download` fetches binary wheels for the base
image's Python and platform on the host, and `build_sandbox_wheel` packs the `sandbox`
package itself into a reproducible wheel (same files -> same bytes -> same image tag).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sandbox.errors import SandboxError

SANDBOX_REQUIREMENTS: tuple[str, ...] = (
    "pydantic",
    "h11",
    "pexpect",
    "jupyter_client",
    "ipykernel",
    "charset_normalizer",
    "mcp",
    # Offered to the agent's Jupyter kernel (and its shell's `python`) as OpenHands' runtime
    # does, so a first plot or table works without an install: numpy, pandas, matplotlib.
    "numpy",
    "pandas",
    "matplotlib",
)
"""What `python -m sandbox serve` needs at run time: not aiohttp (only the client side, in the
app, uses it), and not the browser stack (the browser executor stays host-only).
`charset_normalizer` is the editor's encoding detector, imported on the first non-UTF-8 file;
`mcp` the SDK the MCP executor starts servers with (and the Python an MCP server written with
it runs on: `/opt/sandbox/bin/python`); numpy, pandas and matplotlib the agent's (its writable
env is layered over this venv, `sandbox/agent_env.py`)."""

SANDBOX_DIST = "workbench-sandbox"
LOCAL_WHEELS_ENV = "WORKBENCH_WHEELS"
"""A folder of wheels to build the wheelhouse from instead of the package index (offline)."""
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PythonTarget:
    """The interpreter and platform of a base image, as wheels are tagged."""

    version: tuple[int, int]
    machine: str
    glibc: tuple[int, int]
    micro: int = 0
    """Some packages require e.g. >=3.11.5: 3.11.2 must not get them."""

    def pip_platforms(self) -> list[str]:
        """Every platform tag a wheel for this target may carry (pip does not expand them)."""
        tags = [f"manylinux_2_{minor}_{self.machine}" for minor in range(self.glibc[1], 4, -1)]
        legacy = {"manylinux2014": (2, 17), "manylinux2010": (2, 12), "manylinux1": (2, 5)}
        tags += [f"{name}_{self.machine}" for name, need in legacy.items() if self.glibc >= need]
        return [*tags, f"linux_{self.machine}"]

    @property
    def key(self) -> str:
        """A short stable text naming this target."""
        major, minor = self.version
        return f"cp{major}{minor}.{self.micro}-{self.machine}-glibc{self.glibc[0]}.{self.glibc[1]}"


def cache_dir() -> Path:
    """Where wheelhouses and probe results live: $WORKBENCH_CACHE_DIR or ~/.cache/workbench."""
    explicit = os.environ.get("WORKBENCH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "workbench"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (parallel test workers build things once)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def pinned_requirements() -> list[str]:
    """The sandbox's requirements, pinned to the versions installed on the host when known."""
    pinned = []
    for name in SANDBOX_REQUIREMENTS:
        try:
            pinned.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pinned.append(name)
    return pinned


def build_wheelhouse(target: PythonTarget, progress: Progress | None = None) -> tuple[Path, str]:
    """Binary wheels of the sandbox's dependencies for `target`: (folder, digest), cached."""
    requirements = pinned_requirements()
    key = hashlib.sha256("\n".join([target.key, *requirements]).encode()).hexdigest()[:16]
    folder = cache_dir() / "wheelhouse" / key
    marker = folder / ".digest"
    with file_lock(cache_dir() / "wheelhouse" / f".{key}.lock"):
        if marker.is_file():
            return folder, marker.read_text().strip()
        say = progress or (lambda _line: None)
        say(f"Downloading wheels for {target.key}: {' '.join(requirements)}")
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        try:
            _pip_download(target, requirements, staging)
            digest = _folder_digest(staging)
            (staging / ".digest").write_text(digest + "\n")
            shutil.rmtree(folder, ignore_errors=True)
            staging.rename(folder)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        say(f"Wheelhouse ready: {folder} ({len(list(folder.glob('*.whl')))} wheels)")
        return folder, digest


def _pip_download(target: PythonTarget, requirements: list[str], dest: Path) -> None:
    major, minor = target.version
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
    command += ["--dest", str(dest), "--only-binary=:all:", "--implementation", "cp"]
    command += ["--python-version", f"{major}.{minor}.{target.micro}", "--abi", f"cp{major}{minor}"]
    for platform in target.pip_platforms():
        command += ["--platform", platform]
    local = os.environ.get(LOCAL_WHEELS_ENV)
    if local:  # e.g. the app image: its own wheels, no index needed
        command += ["--no-index", "--find-links", local]
    try:
        done = subprocess.run(command + requirements, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"Could not run pip to build the sandbox wheelhouse: {exc}") from exc
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if "WARNING" not in ln]
        tail = "\n".join(lines[-15:])
        raise SandboxError(
            f"pip could not download the sandbox's wheels for {target.key}:\n{tail}\n"
            "The host needs access to a package index (pip config / PIP_INDEX_URL) and pip "
            "itself; or pick a base image whose Python has wheels for these packages."
        )


def _folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for wheel in sorted(folder.glob("*.whl")):
        digest.update(wheel.name.encode() + b"\0" + file_digest(wheel).encode() + b"\n")
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """The sha256 hex digest of a file."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _project_version() -> str:
    try:
        return importlib.metadata.version("workbench")
    except importlib.metadata.PackageNotFoundError:
        return "0.0.0"


def build_sandbox_wheel(dest: Path) -> Path:
    """Pack the installed `sandbox` package into a reproducible wheel in `dest`."""
    import sandbox

    package = Path(sandbox.__file__).resolve().parent
    version = _project_version()
    dist_info = f"{SANDBOX_DIST.replace('-', '_')}-{version}.dist-info"
    wheel_path = dest / f"{SANDBOX_DIST.replace('-', '_')}-{version}-py3-none-any.whl"
    entries: list[tuple[str, bytes]] = []
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            entries.append((f"sandbox/{path.relative_to(package).as_posix()}", path.read_bytes()))
    requires = "".join(f"Requires-Dist: {req}\n" for req in pinned_requirements())
    metadata = f"Metadata-Version: 2.1\nName: {SANDBOX_DIST}\nVersion: {version}\n{requires}"
    wheel_meta = (
        "Wheel-Version: 1.0\nGenerator: workbench\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entries.append((f"{dist_info}/METADATA", metadata.encode()))
    entries.append((f"{dist_info}/WHEEL", wheel_meta.encode()))
    record = [f"{name},sha256={_record_hash(data)},{len(data)}" for name, data in entries]
    record.append(f"{dist_info}/RECORD,,")
    entries.append((f"{dist_info}/RECORD", ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(wheel_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=_ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return wheel_path


def _record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
