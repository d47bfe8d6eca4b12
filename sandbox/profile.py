"""The sandbox profile as data: what the agent may read, write, run and reach, and what not.

One place for it, read by every runtime (bind mounts, the after-action guard in `protect.py`),
by the editor and the shell (their refusal notes), by the analyzer (`PROTECTED_GLOBS`, rated
HIGH) and by `docs/security.md`, whose profile table is `profile_table()` (a test keeps them
equal).

**Protected paths** are paths *inside* the writable workspace that the agent may read but not
change, because the person's own tools later run what they say on the host: git runs
`core.fsmonitor`, hooks, pagers and filters named in `.git/config`; workbench takes rules from
`.workbench/`; a shell reads the dotfiles of a home folder. Patterns are relative to the
workspace, `/`-separated: a name, `*` for one path part, `**` at the end for everything under a
folder (see `is_protected`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from sandbox.protocol import CmdOutputObservation, IPythonObservation, Observation

PROTECTED_GLOBS: tuple[str, ...] = (
    ".git",  # the entry itself: replacing or renaming it (a .git file or symlink redirects git)
    ".git/config",
    ".git/config.worktree",
    ".git/commondir",
    ".git/hooks",
    ".git/hooks/**",
    ".git/info",
    ".git/info/**",
    ".git/modules/**/config",
    ".git/modules/**/hooks",
    ".git/modules/**/hooks/**",
    ".git/worktrees/*/config.worktree",
    ".git/worktrees/*/commondir",
    ".gitmodules",
    ".workbench",
    ".workbench/**",
)
"""Paths relative to the workspace that the agent cannot change on any runtime (plain tuple:
`workbench/security` imports it to rate a write under them HIGH). Writes to the rest of `.git`
(objects, refs, the index, HEAD, logs) stay allowed: git add, commit, branch, checkout and stash
work."""

HOME_GLOBS: tuple[str, ...] = (".*", ".*/**")
"""Added when the workspace is a home-like folder: every dotfile and dot-folder at its root."""

INCLUDE_KEYS: tuple[str, ...] = ("include.path", "includeif.*.path")
"""Keys of a repository's config naming other config files; those inside the workspace are
protected too (`protect.include_targets`)."""

WHY: dict[str, str] = {
    ".git": "the repository's config and hooks decide what git runs on the host",
    ".gitmodules": "it names the repository's submodules",
    ".workbench": "the project's workbench rules decide what runs without asking",
    "home": "the home folder's dotfiles configure the person's shell and tools",
}


def protected_globs(home_like: bool = False) -> tuple[str, ...]:
    """The protected patterns for a workspace (`home_like`: the person's home folder)."""
    return PROTECTED_GLOBS + HOME_GLOBS if home_like else PROTECTED_GLOBS


def _match(parts: list[str], pattern: list[str]) -> bool:
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return (
            len(parts) >= 1
            if len(pattern) == 1
            else any(_match(parts[i:], pattern[1:]) for i in range(1, len(parts) + 1))
        )
    return (
        bool(parts) and fnmatch.fnmatchcase(parts[0], pattern[0]) and _match(parts[1:], pattern[1:])
    )


def is_protected(relative: str, home_like: bool = False) -> str | None:
    """Why the workspace path `relative` ("a/b", no leading slash) is protected, or None.

    `**` matches one or more path parts; `*` one part (a dot-name too)."""
    parts = [part for part in relative.replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    for pattern in protected_globs(home_like):
        if _match(parts, pattern.split("/")):
            return WHY.get(pattern.split("/")[0], WHY["home"])
    return None


def refusal(path: str, why: str) -> str:
    """What the agent is told when a write under a protected path is refused."""
    return (
        f"{path} is protected in this sandbox ({why}): the agent can read it but not change it; "
        "the person can change it on the host. Nothing was written there. For a one-off git "
        "setting use `git -c key=value ...` or environment variables (GIT_AUTHOR_NAME, ...)."
    )


# ---------------------------------------------------------------------- the profile table


@dataclass(frozen=True)
class Row:
    """One line of the profile: a capability and what each runtime allows."""

    what: str
    local: str
    """The local runtime with bubblewrap (the default where it works)."""
    docker: str
    remote: str
    """A server started elsewhere (`python -m sandbox serve`): what the server itself does."""
    none: str
    """The local runtime with `isolation = "none"`."""


LIMITS_SLOT = "processes, memory, tmpfs sizes"
"""The row the `limits` work fills in (sandbox/limits.py): named here so the table has it."""

PROFILE: tuple[Row, ...] = (
    Row(
        "read",
        "the workspace, the system folders (/usr, /etc, /lib, /opt) and the Python installation; "
        "not /root, /home (but the workspace), the app's data dir, other processes' /proc",
        "the container's image and the mounted workspace and volumes; nothing else of the host",
        "what the server's machine or pod lets its uid read",
        "everything your user can read",
    ),
    Row(
        "write",
        "the workspace (except its protected paths), a private /tmp and /run; "
        "nothing else: the rest is read-only or absent",
        "the workspace (except its protected paths), rw volumes, the container's own files",
        "the workspace (its protected paths are neutralised after each action); "
        "what the server's uid may write",
        "everything your user can write",
    ),
    Row(
        "install Python packages",
        "with pip or %pip into its own env at /run/agent-env (sandbox/agent_env.py): "
        "a folder per workspace in the app's data dir, its files the person's on the host, "
        "layered over the sandbox's venv; kept across kernel restarts and sessions. What the "
        "agent puts there (a sitecustomize, a .pth) runs only in its own shell and kernel, in "
        "this and later sandboxes of the workspace: never in the app, the sandbox server or an "
        "MCP server",
        "the same, in a Docker volume per workspace at /run/agent-env owned by the agent's uid, "
        "layered over the image's venv (numpy, pandas, matplotlib); run only by the agent's "
        "shell and kernel in later containers of the workspace",
        "into an env at the server's --python-env folder, if it was given one",
        "the same per-workspace env, at its path in the data dir; nothing keeps the agent from "
        "the rest of your files anyway",
    ),
    Row(
        "protected paths (PROTECTED_GLOBS)",
        "read-only bind mounts from the start; those that appear later are neutralised after "
        "each action and then bound read-only into every agent process",
        "read-only bind mounts at container creation; those that appear later are "
        "neutralised after each action (not locked: the agent may write them again, and the "
        "next check neutralises that)",
        "neutralised after each action and when the server stops",
        "neutralised after each action and when the session ends (no lock); the editor "
        "refuses them on every runtime",
    ),
    Row(
        "run",
        "any program of the system, in a pid namespace of its own, without capabilities",
        "any program of the image, as the agent's uid (not root by default), no capabilities, "
        "no-new-privileges",
        "any program the server's uid may run",
        "any program, with your rights",
    ),
    Row(
        "reach",
        'sandbox.network: "allowlist" (default) only the hosts the app\'s proxy allows (one '
        "network namespace for the session, its loopback shared by the agent's processes, whose "
        'one way out is the proxy\'s unix socket; others asked); "off" that loopback only; "on" '
        "the network. Not the app's or the server's processes (another pid namespace)",
        'sandbox.network: "allowlist" the proxy\'s allowed hosts (an internal Docker network, '
        "the proxy's socket bound in; the host's own addresses stay reachable), \"off\" no "
        'route out, "on" Docker\'s bridge; not the app nor the server (another real uid)',
        "whatever the pod's network policy allows",
        "everything your user can reach, the app's processes included",
    ),
    Row(
        LIMITS_SLOT,
        "per session ([sandbox.limits], sandbox/limits.py): 1024 processes and memory half the "
        "RAM up to 8 GiB, by a cgroup (v2 delegated, else v1 as root; RLIMIT_NPROC for the "
        "agent's own uid where no cgroup can be made); /tmp, /run, /dev/shm 1 GiB each",
        "the same numbers as Docker's pids limit, memory limit, tmpfs and shm sizes",
        "set by whoever runs the server",
        "processes and memory by a cgroup where one can be made; tmpfs: the host's",
    ),
    Row(
        "who the agent is",
        "an unprivileged uid of its own (sandbox.local.agent_uid; 61000-61999 by default) when "
        "the app is root, the workspace shown to it through an idmapped mount (its files stay "
        "the owner's); your uid, without capabilities, otherwise",
        "SANDBOX_USER_ID, else the workspace owner, else (a root-owned workspace) a non-root "
        "uid through an idmapped mount",
        "the server's uid",
        "your uid",
    ),
)
"""What the agent can do, per runtime: `docs/security.md` shows it as `profile_table()`."""


def profile_table() -> str:
    """`PROFILE` as the Markdown table that docs/security.md holds."""
    lines = [
        "| the agent can | local (bubblewrap) | Docker | remote | local, isolation none |",
        "|---|---|---|---|---|",
    ]
    for row in PROFILE:
        lines.append(f"| {row.what} | {row.local} | {row.docker} | {row.remote} | {row.none} |")
    return "\n".join(lines)


_REFUSED = re.compile(
    r"Read-only file system|Device or resource busy|could not (?:write|lock|commit) config"
    r"|Permission denied|Operation not permitted",
    re.IGNORECASE,
)
_PROTECTED_NAME = re.compile(
    r"(?:[^\s'\"`:]*/)?(?:\.git/(?:config(?:\.worktree)?|hooks|info|modules)[^\s'\"`:]*"
    r"|\.git(?=[\s'\"`:]|$)|\.gitmodules|\.workbench[^\s'\"`:]*)"
)


_DOT_NAME = re.compile(r"(?:^|[\s'\"=<>|;&])(\.[A-Za-z][\w.-]*)")
"""A dot-name in a command (`.bashrc`): a home folder's dotfiles are protected paths too."""


def _refused_at(path: str) -> str:
    return refusal(path, WHY[".workbench" if ".workbench" in path else ".git"])


def refused_write_note(output: str, command: str = "") -> str | None:
    """A note for the agent when a command's output shows a write refused under a protected
    path (git says "could not write config file .git/config: Device or resource busy"; `sed -i`
    only "cannot rename ./sedX: Device or resource busy": then the path is the one the command
    names)."""
    refused = False
    for line in output.splitlines()[-200:]:
        if _REFUSED.search(line):
            refused = True
            name = _PROTECTED_NAME.search(line)
            if name is not None:
                return _refused_at(name.group(0))
    if not refused:
        return None
    named = _PROTECTED_NAME.search(command)
    if named is not None:
        return _refused_at(named.group(0))
    dot = _DOT_NAME.search(command)
    if dot is not None and not dot.group(1).startswith((".git", ".workbench")):
        return (
            f"A write was refused. If it was to {dot.group(1)}: in a home folder the sandbox "
            f"protects the dotfiles and dot-folders at the workspace root ({WHY['home']}), so the "
            "agent can read them but not change them; the person can change them on the host."
        )
    return None


def tell(observation: Observation, found: Sequence[object]) -> Observation:
    """`observation` with a note saying what the guard did after the action."""
    paths = [str(getattr(f, "path", f)) for f in found]
    in_git = [p.startswith((".git", ".workbench")) or "/.git" in p for p in paths]
    protects, fix = [], "The person can change them on the host"
    if any(in_git) or not paths:
        protects.append(
            "the repository's config and hooks (and .workbench/): the person's git on the host "
            "would run what they name"
        )
        fix += "; use `git -c key=value ...` for one command"
    if not all(in_git):
        protects.append(f"the dotfiles at the root of this home folder ({WHY['home']})")
    text = (
        f"The sandbox protects {'; and '.join(protects)}. After this action it did: "
        + "; ".join(str(f) for f in found)
        + f". {fix}."
    )
    if isinstance(observation, (CmdOutputObservation, IPythonObservation)):
        note = f"{observation.note}\n{text}" if observation.note else text
        return observation.model_copy(update={"note": note})
    content = getattr(observation, "content", None)
    if isinstance(content, str):
        return observation.model_copy(update={"content": f"{content}\n[{text}]"})
    return observation
