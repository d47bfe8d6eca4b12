"""The agent's own writable Python environment, shared by its shell and its Jupyter kernel.

The system and the sandbox's own venv are read-only to the agent, so `pip install` and `%pip
install` need a place of their own. The runtime gives the server a folder for it (`--python-env`:
the local runtime binds a per-workspace folder of the app's data dir at `AGENT_ENV`; Docker
mounts a per-workspace volume there), and `prepare` makes it a venv *layered* over the
interpreter the server runs on, in a few milliseconds and without `ensurepip`:

- `pyvenv.cfg` names the base interpreter (`home`), so `bin/python` (a symlink to it) starts
  with the env as `sys.prefix`: pip installs into the env's `site-packages`;
- a `.pth` file there runs `site.addsitedir(<the sandbox venv's site-packages>)`, so everything
  preinstalled (ipykernel, numpy, pandas, matplotlib, pip itself) stays importable, *after*
  what the agent installed (an upgrade wins; pip does not try to remove the old one, which is
  outside the env). `--system-site-packages` would not do: from a venv it exposes the *base*
  interpreter's packages, not the venv's;
- `bin/pip`, `pip3` run that pip.

The shell gets `bin` first on `PATH` (`python`, `python3`, `pip`, `pip3` all mean the env) and
the kernel runs on `bin/python`, so `%pip install` (which runs `sys.executable -m pip`) installs
where the shell's `python -c "import x"` finds it. Only agent processes ever run it: never the
server (its `PATH` is not changed: a `bwrap` the agent put in `bin` must never be found by the
server), never the app, never an MCP server (a `sitecustomize` planted in the env would run
with that server's secrets). `prepare` writes through directory fds without following links,
since the agent may have replaced any part of the folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import sysconfig
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

AGENT_ENV = "/run/agent-env"
"""Where the agent's env is, inside the sandbox (local with bubblewrap, and Docker)."""

_MARKER = ".workbench-env.json"
_PIP = "#!{python}\nimport sys\nfrom pip._internal.cli.main import main\nsys.exit(main())\n"


def layer_dirs() -> list[str]:
    """The site-packages folders of the interpreter the server runs on (its venv's)."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def site_packages(root: Path) -> Path:
    """The env's own site-packages folder (where pip installs)."""
    return root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def python_of(root: Path) -> str:
    """The env's interpreter (what the kernel runs on)."""
    return str(root / "bin" / "python")


def shell_env(root: Path | None, base: Mapping[str, str]) -> dict[str, str]:
    """The variables that make `python`, `pip` ... in a shell mean the env (none without one);
    `base` is the environment the shell would get otherwise (for its PATH)."""
    if root is None:
        return {}
    path = base.get("PATH") or os.defpath
    return {
        "VIRTUAL_ENV": str(root),
        "PATH": f"{root / 'bin'}{os.pathsep}{path}",
        # matplotlib's font cache (~1 s to build) kept with the env, not in the session's $HOME
        "MPLCONFIGDIR": str(root / "matplotlib"),
    }


def prepare(root: Path) -> float:
    """Make `root` (an existing folder) the agent's env over this interpreter, keeping what was
    installed there before; returns the seconds it took. Quick when it is already made."""
    started = time.perf_counter()
    base = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    wanted = {"python": base, "version": sys.version.split()[0], "layer": layer_dirs()}
    marker = json.dumps(wanted, sort_keys=True)
    with _folder(root, ()) as top:
        if _read(top, _MARKER) == marker and _points_to(top, "bin", "python", base):
            return time.perf_counter() - started
        config = (
            f"home = {os.path.dirname(base)}\ninclude-system-site-packages = false\n"
            f"version = {wanted['version']}\nexecutable = {base}\n"
        )
        _write(top, "pyvenv.cfg", config)
        with _folder(root, ("bin",)) as bin_fd:
            _link(bin_fd, "python", base)
            for name in ("python3", f"python{version}"):
                _link(bin_fd, name, "python")
            script = _PIP.format(python=python_of(root))
            for name in ("pip", "pip3", f"pip{version}"):
                _write(bin_fd, name, script, 0o755)
        parts = ("lib", f"python{version}", "site-packages")
        with _folder(root, parts) as site:
            lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in wanted["layer"])
            _write(site, "_workbench_sandbox_layer.pth", lines)
        _write(top, _MARKER, marker)
    return time.perf_counter() - started


@contextlib.contextmanager
def _folder(root: Path, parts: tuple[str, ...]) -> Iterator[int]:
    """A directory fd of `root/parts...`, each part made if missing and replaced if it is not
    a real folder (a symlink the agent put there is removed, never followed)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:  # a symlink or a file where a folder belongs
                os.unlink(part, dir_fd=fd)
                os.mkdir(part, 0o755, dir_fd=fd)
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _read(folder: int, name: str) -> str:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        return handle.read(65536).decode(errors="replace")


def _points_to(folder: int, sub: str, name: str, target: str) -> bool:
    """Whether `sub/name` in `folder` is a symlink to `target` (`sub` not followed if a link)."""
    try:
        fd = os.open(sub, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
    except OSError:
        return False
    try:
        return os.readlink(name, dir_fd=fd) == target
    except OSError:
        return False
    finally:
        os.close(fd)


def _write(folder: int, name: str, text: str, mode: int = 0o644) -> None:
    """Write `name` in `folder` whole (a new file renamed over the old name, never through it)."""
    temp = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, dir_fd=folder)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
    os.fchmod(fd, mode)  # whatever the umask
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)


def _link(folder: int, name: str, target: str) -> None:
    temp = f".{name}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp, dir_fd=folder)
    os.symlink(target, temp, dir_fd=folder)
    os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)


def read_only_note(output: str, root: Path | str | None) -> str | None:
    """What the agent is told when `output` shows a write refused by the read-only system:
    where it can install and write instead (None when nothing was refused so)."""
    if "Read-only file system" not in output[-20000:]:
        return None
    where = (
        f"install Python packages with `pip install ...` (or `%pip install` in Jupyter): they "
        f"go to the agent's own env at {root}, kept for this workspace"
        if root
        else "Python packages cannot be installed in this sandbox"
    )
    return (
        "The system is read-only in this sandbox (only the workspace, /tmp and $HOME are "
        f"writable): {where}."
    )
