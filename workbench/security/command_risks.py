"""The risks a command's name and arguments alone tell: publishing, signals, host control,
persistence, package installs (`commands.py` knows the options and wrappers these read
through; git's own risks are in `git_risks.py`)."""

from __future__ import annotations

import re

from workbench.events import RiskLevel
from workbench.security.commands import (
    RAW_NETWORK,
    git_subcommand,
    in_cluster,
    interpreter,
    is_option,
)
from workbench.security.risk import Category

_PUBLISH = {
    "npm": ("publish",),
    "pnpm": ("publish",),
    "yarn": ("publish", "npm"),
    "twine": ("upload",),
    "poetry": ("publish",),
    "flit": ("publish",),
    "hatch": ("publish",),
    "uv": ("publish",),
    "cargo": ("publish",),
    "gem": ("push",),
    "docker": ("push",),
    "podman": ("push",),
    "helm": ("push",),
}
_INSTALL = {
    "pip": ("install", "download"),
    "pipx": ("install", "inject", "run"),
    "poetry": ("add", "install"),
    "conda": ("install", "create"),
    "mamba": ("install", "create"),
    "micromamba": ("install", "create"),
    "apt": ("install", "upgrade", "full-upgrade", "remove", "purge"),
    "apt-get": ("install", "upgrade", "dist-upgrade", "remove", "purge", "build-dep"),
    "dnf": ("install", "upgrade", "remove"),
    "yum": ("install", "update", "remove"),
    "zypper": ("install", "in", "remove"),
    "apk": ("add", "del"),
    "brew": ("install", "upgrade", "reinstall"),
    "snap": ("install",),
    "flatpak": ("install",),
    "npm": ("i", "install", "add", "ci", "update"),
    "pnpm": ("i", "install", "add", "update"),
    "yarn": ("add", "install"),
    "bun": ("add", "install", "i"),
    "cargo": ("install", "add"),
    "gem": ("install",),
    "go": ("install", "get"),
    "composer": ("require", "install"),
    "uv": ("add", "sync"),
    "dpkg": ("-i", "--install"),
    "rpm": ("-i", "-U", "--install"),
    "pacman": ("-S", "-U"),
}
_DOCKER_RISKY_FLAGS = re.compile(
    r"^--(privileged|pid=host|net=host|network=host|ipc=host|uts=host|userns=host|cap-add"
    r"|device|security-opt)"
)
_DOCKER_HOST = frozenset(
    {"rm", "rmi", "kill", "stop", "restart", "pause", "prune", "update", "exec", "cp"}
)
_HOST_COMMANDS = frozenset(
    {
        "mount", "umount", "swapon", "swapoff", "losetup", "iptables", "ip6tables", "nft",
        "ufw", "firewall-cmd", "shutdown", "reboot", "halt", "poweroff", "telinit", "fdisk",
        "sfdisk", "parted", "wipefs", "mkswap", "modprobe", "insmod", "rmmod", "useradd",
        "userdel", "usermod", "groupadd", "groupdel", "passwd", "chpasswd", "visudo",
        "hostnamectl", "timedatectl", "localectl", "sysctl", "setenforce", "kexec", "blkdiscard",
    }
)  # fmt: skip
_SYSTEMCTL_CHANGES = frozenset(
    {
        "start", "stop", "restart", "reload", "kill", "mask", "disable", "poweroff", "reboot",
        "halt", "isolate", "set-default", "suspend", "hibernate", "try-restart", "daemon-reload",
    }
)  # fmt: skip
_PERSIST_COMMANDS = {
    "at": "schedules a command to run later (at)",
    "batch": "schedules a command to run later (batch)",
    "update-rc.d": "installs a service that starts at boot",
    "chkconfig": "installs a service that starts at boot",
}


def _pip_like(base: str, args: list[str]) -> tuple[str, list[str]]:
    """`python -m pip install` and `uv pip install` as `pip install`."""
    if interpreter(base) == "python" and args[:2] == ["-m", "pip"]:
        return "pip", args[2:]
    if base == "uv" and args[:1] == ["pip"]:
        return "pip", args[1:]
    if re.match(r"^pip[0-9.]*$", base):
        return "pip", args
    return base, args


Risk = tuple[RiskLevel, str, Category]


def simple_risks(base: str, args: list[str]) -> list[Risk]:
    """The risks the command's name and arguments tell by themselves, each with its kind."""
    found: list[Risk] = []
    plain = [a for a in args if not is_option(a)]
    first = plain[0] if plain else ""
    if base == "git":
        sub, rest = git_subcommand(args)
        if sub == "push":
            found.append(("HIGH", "publishes with git push", "publishing"))
        elif (sub == "reset" and "--hard" in rest) or (
            sub == "clean" and any(in_cluster(a, "f") or a == "--force" for a in rest)
        ):
            found.append(("MEDIUM", "discards work in git", "git_discard"))
    if first in _PUBLISH.get(base, ()) or (base == "gh" and plain[:2] == ["release", "create"]):
        found.append(("HIGH", f"publishes to the outside world ({base} {first})", "publishing"))
    if base in ("kill", "pkill", "killall", "killall5", "skill", "tkill") and not _own_jobs(args):
        found.append(("HIGH", f"sends a signal to processes it may not own ({base})", "signal"))
    if base == "fuser" and any(in_cluster(a, "k") for a in args):
        found.append(("HIGH", "kills the processes using a file (fuser -k)", "signal"))
    found += _host_risks(base, args, first)
    if base in RAW_NETWORK:
        found.append(("HIGH", f"opens a raw network connection ({base})", "network"))
    elif base in ("ssh", "sftp", "mosh"):
        found.append(("HIGH", f"connects to another machine ({base})", "network"))
    if base in ("aws", "gsutil", "rclone", "azcopy") and _cloud_upload(args):
        found.append(("HIGH", f"uploads files to cloud storage ({base})", "publishing"))
    if base == "crontab" and not any(a in ("-l", "--list") for a in args):
        found.append(("HIGH", "changes scheduled jobs (crontab)", "persistence"))
    if base in _PERSIST_COMMANDS:
        found.append(("HIGH", _PERSIST_COMMANDS[base], "persistence"))
    if base == "ps" and _ps_shows_environment(args):
        found.append(
            (
                "HIGH",
                "reads other processes' environments, which hold secrets (ps e)",
                "credentials",
            )
        )
    if base in ("gpg", "gpg2") and any(a.startswith("--export-secret") for a in args):
        found.append(("HIGH", "reads credentials (gpg --export-secret-keys)", "credentials"))
    if base in ("npx", "pnpx", "bunx", "uvx") or (base in ("npm", "pnpm") and first == "exec"):
        found.append(("MEDIUM", f"downloads and runs a package ({base})", "install"))
    manager, rest = _pip_like(base, args)
    verbs = _INSTALL.get(manager, ())
    if any(a in verbs for a in (rest if manager in ("dpkg", "rpm", "pacman") else rest[:2])) or (
        manager in ("yarn", "bun") and not rest
    ):
        found.append(("MEDIUM", f"installs packages ({manager})", "install"))
    return found


_PS_VALUES = frozenset(
    {
        "-o", "-O", "-p", "-q", "-u", "-U", "-g", "-G", "-t", "-C", "-s", "-k", "--sort",
        "--format", "--pid", "--ppid", "--user", "--User", "--group", "--Group", "--sid",
        "--tty", "--cols", "--columns", "--rows", "--width", "--quick-pid",
    }
)  # fmt: skip
_PS_BSD_VALUES = "oOpUtkq"
"""BSD-style `ps` letters that take the next word as their value (`ps axo pid,user`)."""


def _ps_shows_environment(args: list[str]) -> bool:
    """True for BSD-style `ps e` (`ps eww`, `ps auxe`); not `ps -e` (every process), nor a
    letter `e` in an option's value (`ps -o user,pid`, `ps -u steve`)."""
    words = iter(args)
    for word in words:
        if word.startswith("-"):
            short_value = not word.startswith("--") and word[-1:] in "oOpqugUGtCsk"
            if word in _PS_VALUES or (len(word) > 2 and short_value and word[1:].isalpha()):
                next(words, None)
            continue
        if not word.isalpha():
            continue
        if "e" in word:
            return True
        if word[-1] in _PS_BSD_VALUES:
            next(words, None)
    return False


def _own_jobs(args: list[str]) -> bool:
    """`kill %1`, `kill $!`, `kill -l`: the shell's own jobs, or only listing signals."""
    if any(a in ("-l", "-L", "--list") for a in args):
        return True
    targets: list[str] = []
    words = iter(args)
    for word in words:
        if word in ("-s", "-n", "--signal"):
            next(words, None)  # the signal's name is the option's value, not a target
        elif not (word.startswith("-") and not word[1:].isdigit()):
            targets.append(word)
    return bool(targets) and all(t.startswith("%") or t == "$!" for t in targets)


def _host_risks(base: str, args: list[str], first: str) -> list[Risk]:
    if base in _HOST_COMMANDS or base.startswith("mkfs"):
        if base == "sysctl" and not any(a == "-w" or "=" in a for a in args):
            return []
        return [("HIGH", f"changes the host system ({base})", "host")]
    if base in ("docker", "podman", "nerdctl"):
        if first in ("run", "create") and any(_DOCKER_RISKY_FLAGS.match(a) for a in args):
            return [
                (
                    "HIGH",
                    f"starts a container with rights on the host ({base} {first})",
                    "privilege",
                )
            ]
        if first in ("run", "create") and any(
            re.match(r"^/(:|$)|^/var/run/docker", a) for a in args
        ):
            return [
                ("HIGH", f"mounts the host's root or Docker socket ({base} {first})", "privilege")
            ]
        groups = ("container", "image", "volume", "system", "network")
        if first in _DOCKER_HOST or (
            first in groups and any(a in ("rm", "prune", "kill", "stop") for a in args)
        ):
            return [("HIGH", f"changes containers on the host ({base} {first})", "host")]
    if base == "systemctl":
        verbs = set(args)
        if verbs & {"enable", "link", "edit", "preset", "add-wants"}:
            return [
                ("HIGH", "installs a service that starts later (systemctl enable)", "persistence")
            ]
        if verbs & _SYSTEMCTL_CHANGES:
            return [("HIGH", "controls services of the host (systemctl)", "host")]
    if base == "service" and len(args) > 1 and args[1] != "status":
        return [("HIGH", "controls services of the host (service)", "host")]
    if base in ("init",) and first in ("0", "6", "1"):
        return [("HIGH", "changes the host's run level (init)", "host")]
    if base == "ip" and any(a in ("add", "del", "delete", "set", "flush", "change") for a in args):
        return [("HIGH", "changes the host's network (ip)", "host")]
    if base == "hostname" and first:
        return [("HIGH", "renames the host", "host")]
    if base == "launchctl" and first in ("load", "bootstrap", "enable", "submit"):
        return [("HIGH", "installs a service that starts later (launchctl)", "persistence")]
    return []


def _cloud_upload(args: list[str]) -> bool:
    plain = [a for a in args if not is_option(a)]
    if not any(p in ("cp", "sync", "mv", "copy", "copyto", "moveto") for p in plain):
        return False
    remote = [i for i, a in enumerate(plain) if re.match(r"^(s3|gs|az|[\w-]+):", a)]
    return bool(remote) and remote[-1] == len(plain) - 1
