"""Where a path lies: inside the workspace, scratch space, credentials, persistence spots."""

from __future__ import annotations

import posixpath
import re
from fnmatch import fnmatchcase

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
