"""The local runtime's isolation against an adversarial agent: real bash, real bwrap, real server.

Each attack runs as the agent would run it, through the runtime's shell (or its kernel), and the
test checks the host afterwards. The same attacks with `isolation="none"` show the difference.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from sandbox.protocol import CmdOutputObservation, CmdRunAction, IPythonAction, IPythonObservation
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

APP_KEY = "sk-app-" + secrets.token_hex(12)

# Every way the agent could look for a secret: its environment, every visible process's
# environment and memory, `ps e`, and files where a token could be left.
REPO = Path(__file__).resolve().parents[2]
"""This checkout: bound into the sandbox read-only (it is the installed code), and full of the
names the hunt looks for, so its files are left out of the file search (they hold no secret)."""
HUNT = r"""{
env
cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n'
ps eww -A 2>/dev/null
grep -rsh --exclude-dir=REPO -e SANDBOX -e sk-app /tmp /run /root /home /etc/sandbox* "$PWD" \
  2>/dev/null | head -c 2000
python3 - <<'EOF'
import glob, re
for maps in glob.glob("/proc/[0-9]*/maps"):
    pid = maps.split("/")[2]
    try:
        with open(maps) as m, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in m:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if "rw" not in line.split()[1] or hi - lo > 1 << 28:
                    continue
                try:
                    mem.seek(lo)
                    data = mem.read(hi - lo)
                except (OSError, ValueError, OverflowError):
                    continue
                for found in re.findall(rb"(?:sk-app-|Bearer )[A-Za-z0-9_-]{8,}", data):
                    print("MEM", pid, found.decode(errors="replace"))
    except OSError as exc:
        print("NOMEM", pid, exc.strerror)
EOF
}"""


@pytest.fixture
def app() -> Iterator[subprocess.Popen[bytes]]:
    """A stand-in for the workbench app: a process whose environment holds the LLM key."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(120)"],
        env={**os.environ, "LLM_API_KEY": APP_KEY},
    )
    yield proc
    proc.kill()
    proc.wait()


async def start(tmp_path: Path, isolation: str, **options: object) -> LocalRuntime:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    runtime = LocalRuntime(workspace, isolation=isolation, disable=["browser"], **options)  # type: ignore[arg-type]
    await runtime.start()
    return runtime


@pytest.fixture
async def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LocalRuntime]:
    monkeypatch.setenv("LLM_API_KEY", APP_KEY)  # in the environment the runtime starts from
    runtime = await start(tmp_path, "auto")
    yield runtime
    await runtime.close()


async def sh(runtime: LocalRuntime, command: str) -> str:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs.content


def token_of(runtime: LocalRuntime) -> str:
    client = runtime._client
    assert client is not None
    return str(client._auth["Authorization"]).split()[1]  # type: ignore[attr-defined]


def port_of(runtime: LocalRuntime) -> int:
    client = runtime._client
    assert client is not None
    return int(str(client.base_url).rsplit(":", 1)[1])  # type: ignore[attr-defined]


async def test_auto_means_bwrap_where_it_works(isolated: LocalRuntime) -> None:
    assert isolated.isolation == "bwrap" and isolated.warning is None


async def test_an_approved_rm_rf_home_and_a_write_to_etc_leave_the_host_unchanged(
    isolated: LocalRuntime,
) -> None:
    home = Path.home()
    decoy = home / f".workbench-decoy-{secrets.token_hex(4)}"
    decoy.write_text("keep me\n")
    etc = Path("/etc") / f"workbench-escape-{secrets.token_hex(4)}"
    scratch = Path("/tmp") / f"workbench-private-{secrets.token_hex(4)}"
    try:
        out = await sh(
            isolated,
            f"rm -rf ~ {home} ~/ 2>&1; ls {decoy} 2>&1; echo pwned > {etc}; echo etc=$?; "
            f"touch /usr/escape; echo usr=$?; echo scratch > {scratch} && echo tmp=ok; "
            "echo mine > made.txt && echo ws=ok",
        )
        assert decoy.read_text() == "keep me\n"  # the real home is untouched
        assert "No such file" in out  # and the agent never saw it
        assert not etc.exists() and "etc=1" in out and "usr=1" in out
        assert "tmp=ok" in out and "ws=ok" in out  # the workspace and /tmp stay writable
        assert (isolated.workspace / "made.txt").read_text() == "mine\n"
        assert not scratch.exists()  # /tmp is private to the sandbox
    finally:
        decoy.unlink(missing_ok=True)
        etc.unlink(missing_ok=True)


async def test_the_agent_cannot_find_the_key_or_the_token(
    isolated: LocalRuntime, app: subprocess.Popen[bytes]
) -> None:
    token = token_of(isolated)
    out = await sh(isolated, HUNT.replace("REPO", REPO.name))
    assert "LLM_API_KEY" not in out and APP_KEY not in out
    assert token not in out and "SANDBOX_TOKEN" not in out
    assert "sandbox serve" not in out  # the server's process is not even visible
    cell = await isolated.execute(
        IPythonAction(
            # Each one it may read (as its own uid, the nested bwrap's root-owned init is not).
            code="import glob, os\nprint(b''.join(open(p, 'rb').read() for p in "
            "glob.glob('/proc/[0-9]*/environ') if os.access(p, os.R_OK)))"
        )
    )
    assert isinstance(cell, IPythonObservation) and not cell.error
    assert APP_KEY not in cell.content and token not in cell.content


async def test_the_server_refuses_the_agent_without_the_token(isolated: LocalRuntime) -> None:
    """Reaching the server is possible; every route answers 401 without the token (which
    the agent cannot read: see the environ tests above)."""
    url = f"http://127.0.0.1:{port_of(isolated)}"
    out = await sh(
        isolated,
        f"""python3 - <<'EOF'
import urllib.request, urllib.error
for path in ("/files?path=.", "/execute"):
    try:
        urllib.request.urlopen("{url}" + path, data=b"{{}}" if path == "/execute" else None)
        print("OPEN", path)
    except urllib.error.HTTPError as exc:
        print("HTTP", exc.code)
EOF""",
    )
    assert "OPEN" not in out and out.count("HTTP 401") == 2


async def test_the_agent_cannot_signal_the_app_or_the_server(
    isolated: LocalRuntime, app: subprocess.Popen[bytes]
) -> None:
    assert isolated.pid is not None
    out = await sh(
        isolated,
        f"kill -TERM {app.pid} {os.getpid()} {isolated.pid}; echo rc=$?; "
        "pkill -f 'sandbox serve'; echo pkill=$?; ps -eo pid,args",
    )
    assert "rc=1" in out and "pkill=1" in out and "sandbox serve" not in out
    assert app.poll() is None  # still running
    assert (await sh(isolated, "echo still")).strip() == "still"  # the same server, no restart note


async def test_network_off_reaches_nothing(tmp_path: Path) -> None:
    runtime = await start(tmp_path, "bwrap", network=False)
    try:
        out = await sh(
            runtime,
            f"""python3 -c '
import socket
try:
    socket.create_connection(("127.0.0.1", {port_of(runtime)}), timeout=2)
    print("CONNECTED")
except OSError as exc:
    print("REFUSED", exc)'""",
        )
        assert "REFUSED" in out and "CONNECTED" not in out
    finally:
        await runtime.close()


async def test_isolation_none_turns_it_all_off(
    tmp_path: Path, app: subprocess.Popen[bytes]
) -> None:
    """The control: without isolation the same agent reads the app's key and signals it."""
    runtime = await start(tmp_path, "none")
    home_decoy = Path.home() / f".workbench-visible-{secrets.token_hex(4)}"
    home_decoy.write_text("seen\n")
    try:
        out = await sh(
            runtime,
            f"tr '\\0' '\\n' < /proc/{app.pid}/environ | grep LLM_API_KEY; "
            f"cat {home_decoy}; kill -TERM {app.pid}; echo rc=$?",
        )
        assert APP_KEY in out and "seen" in out and "rc=0" in out
        assert app.wait(timeout=5) == -signal.SIGTERM
    finally:
        home_decoy.unlink(missing_ok=True)
        await runtime.close()
