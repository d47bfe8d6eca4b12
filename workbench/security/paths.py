"""Where a path lies: inside the workspace, scratch space, credentials, persistence spots."""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase

from sandbox.profile import PROTECTED_GLOBS as _PROFILE_GLOBS

PERSISTS = "a file that decides what runs later (persistence)"
"""What a reason says of a persistence spot."""
SCRATCH = ("/tmp", "/var/tmp")
"""Where a file of its own is harmless output (deleting, or writing into others' folders, is
not)."""
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})

_CREDENTIALS = re.compile(
    r"^~/\.(ssh|aws|gnupg|netrc|git-credentials|pgpass|docker/config\.json|kube|azure"
    r"|config/gcloud|config/gh|npmrc|pypirc|vault-token|password-store)(/|$)"
    r"|^/proc/[^/]+/(environ|mem|maps|auxv|cmdline)$|^/proc/[^/]+/task/[^/]+/(environ|mem)$"
    r"|^/etc/(shadow|gshadow|sudoers)|^/root(/|$)|/id_(rsa|dsa|ecdsa|ed25519)(\.pub)?$"
    r"|^/home/[^/]+/\.(ssh|aws|gnupg|netrc)(/|$)|^/run/secrets(/|$)"
)
_PERSISTENCE = re.compile(
    r"^~/\.(bashrc|bash_profile|bash_login|bash_logout|profile|zshrc|zprofile|zshenv|zlogin"
    r"|cshrc|tcshrc|kshrc|inputrc|xprofile|xinitrc|config/fish|config/autostart"
    r"|config/systemd|local/share/systemd|gitconfig|config/git/config|pam_environment)(/|$)"
    r"|/authorized_keys2?$|^~/\.ssh/(rc|config)$"
    r"|^/etc/(cron|anacrontab|profile|bash\.bashrc|environment|rc\.local|systemd|init\.d"
    r"|ld\.so\.preload|sudoers|passwd|group|shadow|ssh/|pam\.d|gitconfig|xdg/autostart)"
    r"|^/(usr/lib|lib|usr/local/lib)/systemd/|^/var/spool/cron"
    r"|(^|/)\.git/hooks(/|$)|(^|/)\.git/config$|(^|/)\.husky/"
    r"|(^|/)\.workbench(/|$)|^~/\.config/workbench(/|$)"  # our own rules: what runs unasked
)


def _analyzer_globs(profile_globs: tuple[str, ...]) -> tuple[str, ...]:
    """The sandbox profile's protected paths in the analyzer's form: a trailing `/` for a
    folder and everything in it, `*` for one name (`**` inside a pattern becomes `*`; the
    entries that only name a folder, `.git` itself, are `holds_protected`'s)."""
    folders = {glob[: -len("/**")] for glob in profile_globs if glob.endswith("/**")}
    found: list[str] = []
    for glob in profile_globs:
        if glob.endswith("/**") or glob == ".git":
            continue
        form = glob.replace("**", "*") + ("/" if glob in folders else "")
        if form not in found:
            found.append(form)
    return tuple(found)


PROTECTED_GLOBS: tuple[str, ...] = _analyzer_globs(_PROFILE_GLOBS)
"""Paths inside the workspace the agent may not change, relative to it, as the sandbox
profile (`sandbox/profile.py`, which makes them read-only in every runtime) names them.
`include.path`/`includeIf` targets are protected by the profile too; the analyzer cannot know
them, and rates every `git config` that writes instead."""
_PROTECTED_WHAT = {
    ".git/config": "the repository's config",
    ".git/config.worktree": "the repository's worktree config",
    ".git/commondir": "where git finds the repository",
    ".git/hooks/": "the repository's hooks",
    ".git/info/": "git's info folder (attributes, excludes)",
    ".git/modules/*/config": "a submodule's config",
    ".git/modules/*/hooks/": "a submodule's hooks",
    ".git/worktrees/*/config.worktree": "a worktree's config",
    ".git/worktrees/*/commondir": "where a worktree finds the repository",
    ".gitmodules": "the list of submodules",
    ".workbench/": "the project's workbench config",
}
PROTECTED_WHY = "the person can change it on the host"
"""What a reason says of a protected path."""
PROTECTED_HELD = "the person can change them on the host"
"""What a reason says of several protected paths."""


def _relative(path: str, workspace: str) -> list[str] | None:
    """The names of absolute `path` below the workspace (empty for the workspace itself)."""
    if not inside(path, workspace):
        return None
    rest = path[len(workspace.rstrip("/")) :].strip("/")
    return rest.split("/") if rest else []


def _glob_parts(glob: str) -> tuple[list[str], bool]:
    return glob.rstrip("/").split("/"), glob.endswith("/")


def _could_be(name: str, part: str) -> bool:
    """True when the name `name` (a glob too: `hoo*`) could be the protected name `part`."""
    if not any(char in name for char in "*?["):
        return fnmatchcase(name, part)
    if part.startswith(".") and not name.startswith("."):
        return False  # the shell's `*` does not match a leading dot
    return part == "*" or fnmatchcase(part, name)


def _matches(names: list[str], parts: list[str]) -> bool:
    return all(map(_could_be, names, parts))


def protected(path: str, workspace: str) -> str | None:
    """What `path` is when it is a protected path or lies in a protected folder ("the
    repository's config"), else None. A glob (`.git/hoo*/x`) counts when it could name one."""
    names = _relative(path, workspace)
    if names is None:
        return None
    for glob in PROTECTED_GLOBS:
        parts, folder = _glob_parts(glob)
        if len(names) < len(parts) or (len(names) > len(parts) and not folder):
            continue
        if _matches(names[: len(parts)], parts):
            return _PROTECTED_WHAT.get(glob, "a protected path")
    return None


def protected_reason(verb: str, word: str, what: str) -> str:
    """The reason for changing a protected path: `writes .git/config, a protected path (the
    repository's config): the person can change it on the host`."""
    return f"{verb} {word}, a protected path ({what}): {PROTECTED_WHY}"


def holds_protected_reason(verb: str, word: str, folder: str, workspace: str) -> str:
    """The reason for replacing or moving a folder that holds protected paths (`.git`)."""
    names = ", ".join(protected_names(folder, workspace))
    return f"{verb} {word}, which holds protected paths ({names}): {PROTECTED_HELD}"


def unknown_contents_reason(verb: str, word: str, folder: str, workspace: str) -> str:
    """The reason for writing names not known before it runs into a folder that holds
    protected paths (an archive unpacked into the workspace)."""
    names = ", ".join(protected_names(folder, workspace))
    where = "the workspace" if folder.rstrip("/") == workspace.rstrip("/") else word
    return (
        f"{verb} {where}: the names it writes are not known before it runs and may include "
        f"protected paths ({names}): {PROTECTED_HELD}"
    )


def protected_tail(tail: str) -> str | None:
    """What protected path a path may be that ends in `tail` after a part known only when it
    runs (`$(git rev-parse --git-dir)/hooks/pre-commit`). A bare `/config` is not enough."""
    names = [name for name in tail.split("/") if name]
    if not names or (len(names) < 2 and not names[0].startswith(".")):
        return None
    for glob in PROTECTED_GLOBS:
        parts, folder = _glob_parts(glob)
        for start in range(len(parts)):
            suffix = parts[start:]
            fits = len(names) >= len(suffix) if folder else len(names) == len(suffix)
            if fits and _matches(names[: len(suffix)], suffix):
                return _PROTECTED_WHAT.get(glob, "a protected path")
    return None


def holds_protected(path: str, workspace: str) -> bool:
    """True when `path` is a folder that holds protected paths: the workspace itself, `.git`,
    `.git/modules` (writing unknown contents into it may write them)."""
    names = _relative(path, workspace)
    if names is None:
        return False
    return any(
        len(names) < len(parts) and _matches(names, parts)
        for parts, _ in map(_glob_parts, PROTECTED_GLOBS)
    )


def protected_names(folder: str, workspace: str) -> list[str]:
    """The names directly in `folder` that are protected or hold protected paths."""
    names = _relative(folder, workspace)
    if names is None:
        return []
    found = [
        parts[len(names)]
        for parts, _ in map(_glob_parts, PROTECTED_GLOBS)
        if len(parts) > len(names) and _matches(names, parts)
    ]
    return list(dict.fromkeys(found))


def resolve(path: str, cwd: str | None) -> str | None:
    """`path` made absolute against `cwd` and normalised (`~` kept); None when not known."""
    if not path or "\x00" in path:
        return None
    if path.startswith("~"):
        head, _, tail = path.partition("/")
        return posixpath.normpath("~/" + tail) if head == "~" else "/home/" + path[1:]
    if path.startswith("/"):
        return posixpath.normpath(path).replace("//", "/")
    if cwd is None:
        return None
    return posixpath.normpath(posixpath.join(cwd, path))


def inside(path: str, workspace: str) -> bool:
    """True when absolute `path` is the workspace or lies under it."""
    ws = workspace.rstrip("/") or "/"
    return path == ws or path.startswith(ws + "/")


def outside_workspace(path: str, workspace: str, cwd: str | None = None) -> bool:
    """True when `path` (relative ones against `cwd`, default the workspace) is outside it."""
    full = resolve(path, workspace if cwd is None else cwd)
    return full is not None and not inside(full, workspace)


def scratch(path: str) -> bool:
    """True for a throw-away place where writing output harms nothing (a file directly in
    /tmp; deeper folders there belong to other programs)."""
    return (
        path in HARMLESS_TARGETS
        or path.startswith("/dev/fd/")
        or posixpath.dirname(path) in SCRATCH
    )


def credential(path: str) -> bool:
    """True when `path` holds secrets (keys, tokens, another process's environment)."""
    return bool(_CREDENTIALS.search(path))


def persistence(path: str) -> bool:
    """True when writing `path` makes something run later (rc files, cron, hooks, units)."""
    return bool(_PERSISTENCE.search(path))


_CREDENTIAL_SAMPLES = (
    "~/.ssh/id_rsa",
    "~/.ssh/id_ed25519",
    "~/.aws/credentials",
    "~/.netrc",
    "/proc/1/environ",
    "/proc/1/mem",
    "/etc/shadow",
    "~/.git-credentials",
    "~/.docker/config.json",
    "~/.kube/config",
)
_PERSISTENCE_SAMPLES = (
    "~/.bashrc",
    "~/.profile",
    "~/.zshrc",
    "~/.bash_profile",
    "~/.ssh/authorized_keys",
    "/etc/crontab",
    "/etc/cron.d/x",
    "~/.config/systemd/user/x.service",
    ".git/hooks/pre-commit",
    "~/.gitconfig",
    "/etc/profile",
    ".workbench/config.toml",
)


def glob_hits(pattern: str, credentials: bool) -> str | None:
    """A well-known secret (or persistence) path that the glob `pattern` would match."""
    samples = _CREDENTIAL_SAMPLES if credentials else _PERSISTENCE_SAMPLES
    parts = pattern.split("/")
    for sample in samples:
        names = sample.split("/")
        if len(names) == len(parts) and all(map(fnmatchcase, names, parts)):
            return sample
    return None
