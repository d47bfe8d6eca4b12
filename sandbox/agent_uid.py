"""The agent as its own unprivileged uid inside the local runtime's nested bwrap (app run as root).

`AgentUser` says who the agent is and what it writes; `agent_parts` turns it into the nested
bwrap's extra options and the command that ends its start. The server makes the idmapped
mounts once (`sandbox/idmap.py`: each folder's owner -> the agent's uid), in a folder of its
own /tmp, before anything of the agent runs; every agent process's bwrap binds them over the
real folders (a bind keeps the idmap), so a start costs two small `exec`s rather than a Python
interpreter. The command: `sh` writes "0" to each `cgroup.procs` of the session's limits,
`prlimit` sets `RLIMIT_NPROC` when no cgroup limits processes, and `setpriv` (util-linux) sets
every uid and gid to the agent's, clears the groups, the inheritable and bounding capability
sets, sets no-new-privileges and execs the program.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

_JOIN = 'for f do [ "$f" = -- ] && break; echo 0 > "$f" || exit 126; shift; done; shift; exec "$@"'
"""`sh -c` script: join each cgroup named before `--`, then exec what follows."""


@dataclass(frozen=True)
class AgentUser:
    """Who the agent is on the local runtime when the app is root: a separate unprivileged uid."""

    uid: int
    gid: int
    name: str = "workbench"
    idmap: list[tuple[str, int, int]] = field(default_factory=list)
    """Folders the agent writes and their owner's uid and gid: an idmapped mount each, owner ->
    agent (nested folders after the folders holding them)."""
    join: list[str] = field(default_factory=list)
    """`cgroup.procs` files to write "0" to (the session's limits)."""
    passwd: str = ""
    """A passwd file with the agent's entry, shown at /etc/passwd ("" leaves it)."""
    group: str = ""
    """A group file with the agent's group, shown at /etc/group ("" leaves it)."""
    nproc: int = 0
    """RLIMIT_NPROC of the agent's uid (0 leaves it): processes when no cgroup limits them."""

    @classmethod
    def parse(cls, text: str) -> AgentUser:
        """From `to_json`'s text (the server's `--agent-uid`)."""
        data = json.loads(text)
        data["idmap"] = [tuple(entry) for entry in data.get("idmap", [])]
        return cls(**data)

    def to_json(self) -> str:
        """As one JSON line (no secret in it: it travels on a command line)."""
        return json.dumps(asdict(self), separators=(",", ":"))


def agent_parts(agent: AgentUser) -> tuple[list[str], list[str]] | str:
    """(bwrap options, the command before the program) that start agent processes as `agent`,
    the idmapped mounts made; or why not. Must run as root, before any agent process."""
    if os.geteuid() != 0:
        return "running the agent as its own uid needs the server to run as root"
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return "setpriv is not installed (it comes with util-linux)"
    from sandbox import idmap, ro_mounts

    hidden = Path(tempfile.mkdtemp(prefix="wb-agent-mounts-"))
    options: list[str] = []
    try:
        trees = idmap.idmap_clones(agent.idmap, (agent.uid, agent.gid))
        for index, (tree, target) in enumerate(trees):
            place = hidden / str(index)
            place.mkdir()
            idmap.attach(tree, str(place))
            ro_mounts.mirror(target, str(place))  # locks made later reach the agent's view
            options += ["--bind", str(place), target]
    except OSError as exc:
        return f"cannot make the agent's idmapped mounts: {exc}"
    for source, target in ((agent.passwd, "/etc/passwd"), (agent.group, "/etc/group")):
        if source:
            options += ["--ro-bind", source, target]
    options += ["--setenv", "USER", agent.name, "--setenv", "LOGNAME", agent.name]
    tail: list[str] = []
    if agent.join:
        tail += ["/bin/sh", "-c", _JOIN, "sh", *agent.join, "--"]
    if agent.nproc:
        tail += [shutil.which("prlimit") or "prlimit", f"--nproc={agent.nproc}:{agent.nproc}"]
    tail += [setpriv, f"--reuid={agent.uid}", f"--regid={agent.gid}", "--clear-groups"]
    tail += ["--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]
    return options, tail
