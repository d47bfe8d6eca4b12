"""What the agent is told of its world: a few lines of the system prompt saying what the
sandbox profile lets it do (where it may write, what is protected, its home, the network, how
to install packages, its limits), so that a refusal is no surprise."""

from __future__ import annotations

from typing import Any

from workbench.config.schema import Config


def sandbox_world(config: Config, runtime: Any, limits: str | None = None) -> str:
    """The system prompt's paragraph on the sandbox of `runtime` (a started runtime), with the
    limits in force (`limits`, e.g. "limits: 1024 processes (cgroup v1), ...")."""
    box = config.sandbox
    lines = ["Your sandbox:"]
    if box.runtime == "remote":
        lines.append(
            "* A sandbox server elsewhere: what you may read, write and reach is what its "
            "machine allows. Stay in the workspace."
        )
    elif box.runtime == "docker":
        lines.append(
            "* A container: the workspace is the person's folder, mounted; the rest of the file "
            "system is the container's own and is lost when the session ends."
        )
    elif getattr(runtime, "isolation", "none") == "bwrap":
        lines.append(
            "* Only the workspace (and a private /tmp) is writable; the system is read-only and "
            "the person's home folder is not there. $HOME is /tmp/home, private to this session "
            "and emptied when it ends."
        )
        if getattr(runtime, "own_uid", False):
            lines.append("* You run as an unprivileged user of your own, without sudo.")
    else:
        lines.append(
            "* Not isolated: commands run with the person's rights on their machine. Change "
            "nothing outside the workspace."
        )
    lines.append(
        "* Protected paths in the workspace are read-only: .git/config, .git/hooks/, "
        ".git/info/, .gitmodules and .workbench/ (the person's git and workbench would run or "
        "trust what they say). git add, commit, branch, checkout and stash work; for a one-off "
        "setting use `git -c key=value ...` or GIT_AUTHOR_NAME and the like."
    )
    lines.append(_network_line(box.network if box.runtime != "remote" else "on"))
    lines.append(_packages_line(box.runtime, runtime))
    if limits:
        lines.append(
            f"* {limits[0].upper()}{limits[1:]}: a process or memory error may mean one "
            "was reached."
        )
    lines.append(
        "* A refused action says why and what you can do instead: do not repeat it; take "
        "another way or ask the person."
    )
    lines.append(_escalation(config))
    return "\n".join(lines)


def _packages_line(kind: str, runtime: Any) -> str:
    """How to install packages: into the agent's own Python env (local and Docker runtimes)."""
    if kind == "remote":
        return (
            "* Packages: `pip install --user` and tools in $HOME may not last; for what must "
            "stay, make a virtual environment in the workspace."
        )
    from sandbox.agent_env import AGENT_ENV

    env = getattr(runtime, "python_env", None)
    isolated = kind == "docker" or getattr(runtime, "isolation", "") == "bwrap"
    where = AGENT_ENV if isolated or env is None else str(env)
    kept = "kept for this workspace" if env is not None else "kept until the session ends"
    return (
        "* Python: `python`, `python3` and `pip` in the shell and `%pip install` in Jupyter all "
        f"use your own environment at {where} (numpy, pandas, matplotlib ready), {kept}: "
        "install with `pip install ...` (not `--user`, not sudo) and both the shell and the "
        "kernel see it. Other tools in $HOME last for this session only."
    )


def _escalation(config: Config) -> str:
    """The line on running one command outside the sandbox (`tools/host_run.py`)."""
    line = (
        "* Escalation: when a command truly cannot work in the sandbox, execute_bash with "
        "escalate=true and a justification asks the person to run it OUTSIDE the sandbox, on "
        "their machine, in the workspace folder. It is asked every time and no rule approves "
        "it; use it rarely, never to get around a refusal."
    )
    if not config.security.allow_escalation:
        line += " In a run with nobody to ask (headless) it is refused."
    return line


def _network_line(mode: str) -> str:
    """What the agent reaches under network `mode`, and what to do when a host is refused."""
    if mode == "off":
        return "* There is no network (loopback only)."
    if mode == "on":
        return "* The network is on."
    return (
        "* The network goes through a proxy (HTTP_PROXY/HTTPS_PROXY are set; pip, git, curl "
        "and npm use them): package registries and source hosts (PyPI, npm, crates.io, "
        "GitHub, GitLab, ...) are reachable; another host needs the person's yes, and a "
        "refused one answers 403 with the reason. Nothing connects around the proxy."
    )
