"""Where a stdio MCP server's files are on the host, and what it must be shown in the sandbox.

`plan_server` reads a server's `command` as the person wrote it in a config file:
- a relative path (in `command`, `read_only`, `writable`) is from that file's folder
  (`Config.mcp_base`), since servers start in `/`; an argument counts as a path when it starts
  with `/`, `~`, `./` or `../`, or names something that exists from that folder (`pkg@1` or
  `@scope/pkg` do not), also as the value of `--option=value`;
- the program is found with the host's PATH (where the person's `uvx`, nvm's `node` or a
  venv's `python` are) and shown to the server with what it needs: the whole prefix when its
  folder is the `bin` of a venv (`pyvenv.cfg`), a Node (`lib/node_modules`) or Python
  (`lib/python3*`) installation, else the file (in `~/.local/bin`: with `~/.local/lib/python3*`
  only); the same for the file a symlink leads to and for a script's `#!` interpreter
  (`#!/usr/bin/env node` looked up on PATH);
- a file named in the arguments is shown with its folder (sibling modules, `node_modules`),
  or alone when that folder is the home folder, `/` or the config file's; a folder named
  there is not shown unless listed in `read_only`: it is reported as hidden, with that fix.

Paths already visible in the sandbox (the system folders, the workspace) are not mounted,
except a `writable` one in a read-only system folder.
`stage_of` names where the local runtime stages each mounted path (`sandbox/confine.py`).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sandbox.confine import stage_name
from sandbox.runtimes.bwrap import SYSTEM_DIRS

if TYPE_CHECKING:
    from workbench.config.schema import Config
    from workbench.config.schema_mcp import McpServerConfig

_PATH_START = ("/", "~", "./", "../")


@dataclass
class ServerPlan:
    """One stdio server as it will start: its command, the host paths it must see."""

    command: list[str]
    mounts: list[tuple[Path, bool]] = field(default_factory=list)
    """Host paths shown to this server alone (path, writable)."""
    host_paths: list[str] = field(default_factory=list)
    """Paths its command names that exist on the host (the sandbox says which it cannot see)."""
    notes: list[str] = field(default_factory=list)
    """Problems found on the host (a `read_only` path that does not exist)."""


def stage_of(path: Path, writable: bool) -> str:
    """Where the local runtime stages `path` for the MCP servers (the agent cannot see it)."""
    return stage_name(str(path), writable)


def _absolute(text: str, base: Path) -> Path:
    """`text` as an absolute path: `~` expanded, relative from `base`, `..` folded."""
    path = Path(os.path.expanduser(text))
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def _is_path(text: str, base: Path) -> bool:
    if not text or text.startswith("-"):
        return False
    if text.startswith(_PATH_START):
        return True
    try:
        return (base / text).exists()
    except (OSError, ValueError):
        return False


def _program_mounts(program: Path, seen: set[Path] | None = None) -> list[Path]:
    """What running `program` needs to see: its install prefix or the file, and the same for
    its `#!` interpreter."""
    seen = set() if seen is None else seen
    mounts: list[Path] = []
    for path in dict.fromkeys([program, Path(os.path.realpath(program))]):
        if path in seen:
            continue
        seen.add(path)
        mounts += _install_of(path)
    interpreter = _interpreter(Path(os.path.realpath(program)))
    if interpreter is not None and interpreter not in seen:
        mounts += _program_mounts(interpreter, seen)
    return mounts


def _install_of(program: Path) -> list[Path]:
    """What running `program` needs besides itself: the installation its `bin` folder is in
    (a venv, a Python or Node prefix: pyenv, nvm, uv's pythons), or, in `~/.local`, only its
    Python packages (the rest of `~/.local` is the person's, not the program's)."""
    folder, prefix = program.parent, program.parent.parent
    if folder.name != "bin":
        return [program]
    pythons = sorted((prefix / "lib").glob("python3*"))
    if prefix == Path.home() / ".local":
        return [program, *pythons]
    if (prefix / "pyvenv.cfg").is_file() or (prefix / "lib" / "node_modules").is_dir() or pythons:
        return [prefix]
    return [program]


def _interpreter(script: Path) -> Path | None:
    """The program of a `#!` line (`env NAME` looked up on PATH), if `script` has one."""
    try:
        with script.open("rb") as file:
            head = file.read(256)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if not words:
        return None
    if Path(words[0]).name == "env":
        names = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        found = shutil.which(names[0]) if names else None
        return Path(found) if found else None
    return Path(words[0])


def _file_mount(path: Path, base: Path) -> Path:
    """A script is shown with its folder, unless that folder is the home folder, `/` or the
    config file's (which holds the other servers' secrets, maybe the LLM key)."""
    folder = path.parent
    if folder in (Path.home(), Path("/"), base):
        return path
    return folder


def plan_server(
    server: McpServerConfig, base: Path, workspace: Path | None, find_program: bool = True
) -> ServerPlan:
    """The command of `server` resolved on the host and what it must see (see the module doc).

    `workspace`: shown anyway, writable (the system folders are shown read-only: a
    `writable` path in them is still mounted). `find_program`: look the program up on the
    host's PATH (only where the server runs on this machine's files)."""
    command = list(server.command)
    plan = ServerPlan(command)
    mounts: list[tuple[Path, bool]] = []
    program = command[0]
    if "/" in program or program.startswith("~"):
        command[0] = str(_absolute(program, base))
    elif find_program:
        found = shutil.which(program)  # not found: the sandbox's error names it
        if found:
            command[0] = str(Path(found).absolute())
    if find_program and Path(command[0]).is_file():
        mounts += [(m, False) for m in _program_mounts(Path(command[0]))]
    for index in range(1, len(command)):
        option, sep, value = command[index].partition("=")
        if not sep or not option.startswith("-"):
            option, sep, value = "", "", command[index]
        if not _is_path(value, base):
            continue
        path = _absolute(value, base)
        command[index] = f"{option}{sep}{path}"
        if path.exists():
            plan.host_paths.append(str(path))
            if path.is_file():  # and where a symlink leads
                for file in dict.fromkeys([path, Path(os.path.realpath(path))]):
                    mounts.append((_file_mount(file, base), False))
    for listed, writable in ((server.read_only, False), (server.writable, True)):
        for text in listed:
            path = _absolute(text, base)
            if not path.exists():
                key = "writable" if writable else "read_only"
                plan.notes.append(f"{key} names {path}, which does not exist on the host")
                continue
            plan.host_paths.append(str(path))
            mounts.append((path, writable))
    plan.mounts = _needed(mounts, workspace)
    return plan


def _needed(mounts: list[tuple[Path, bool]], workspace: Path | None) -> list[tuple[Path, bool]]:
    """`mounts` without those the sandbox shows anyway, nor those inside another one of the
    same kind; outer ones first, so one inside another of the other kind is mounted over it."""
    kept: list[tuple[Path, bool]] = []
    ordered = sorted(dict.fromkeys(mounts), key=lambda m: (len(m[0].parts), m[1]))
    for path, writable in ordered:
        shown = [] if writable else [Path(d) for d in SYSTEM_DIRS]
        if any(path.is_relative_to(root) for root in [*filter(None, [workspace]), *shown]):
            continue
        if any(path.is_relative_to(p) and w == writable for p, w in kept):
            continue
        kept.append((path, writable))
    return kept


def plans_of(config: Config, workspace: Path) -> dict[str, ServerPlan]:
    """The plan of every stdio server of `config` (those with `sandbox = false` too: their
    relative paths are resolved the same way)."""
    find = config.sandbox.runtime == "local"  # a container has programs of its own
    return {
        name: plan_server(server, config.mcp_base, workspace, find or not server.sandbox)
        for name, server in config.mcp.servers.items()
        if server.command
    }


def staged_mounts(config: Config, workspace: Path) -> list[tuple[str, bool]] | None:
    """What the local runtime stages for the sandboxed stdio servers (None: there are none)."""
    plans = plans_of(config, workspace)
    sandboxed = [name for name in plans if config.mcp.servers[name].sandbox]
    if not sandboxed:
        return None
    mounts = (mount for name in sandboxed for mount in plans[name].mounts)
    return [(str(path), writable) for path, writable in dict.fromkeys(mounts)]
