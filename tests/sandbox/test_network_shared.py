"""Under network "allowlist" and "off" the local runtime's agent processes share one network
namespace (`sandbox/net_namespace.py`): a server started in the shell answers the kernel and the
browser on 127.0.0.1, and the one bridge to the proxy is out of the agent's reach. Real bwrap,
real bash, a real kernel and Chromium."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from net_support import MARKER, allow_localhost, fetch, outside_server
from waiting import wait_until

from sandbox.executors.browser import browser_unavailable_reason
from sandbox.protocol import (
    BrowseAction,
    BrowseObservation,
    CmdOutputObservation,
    CmdRunAction,
    IPythonAction,
    IPythonObservation,
)
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="bubblewrap does not work")

PAGE = "page-served-from-the-shell"
SERVE = (
    "mkdir -p site && echo {page} > site/index.html && "
    "(python3 -m http.server {port} --bind 127.0.0.1 -d site >/dev/null 2>&1 &) && "
    "for i in $(seq 200); do curl -s --noproxy '*' http://127.0.0.1:{port}/ && break; "
    "sleep 0.05; done"
)


async def _start(tmp_path: Path, network: str, disable: list[str]) -> LocalRuntime:
    workspace = tmp_path / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    runtime = LocalRuntime(workspace, isolation="bwrap", network=network, disable=disable)
    if runtime.net_proxy is not None:
        runtime.net_proxy.decide = allow_localhost
    await runtime.start()
    return runtime


async def _sh(runtime: LocalRuntime, command: str) -> str:
    obs = await runtime.execute(CmdRunAction(command=command, timeout=60))
    assert isinstance(obs, CmdOutputObservation), obs
    return obs.content


async def _kernel_get(runtime: LocalRuntime, url: str, proxied: bool = False) -> str:
    code = "import os, urllib.request as u\n"
    if proxied:  # the test's "outside" is the host's loopback, which NO_PROXY names
        code += "os.environ['no_proxy'] = os.environ['NO_PROXY'] = ''\n"
    code += f"print(u.urlopen({url!r}, timeout=10).read().decode())"
    obs = await runtime.execute(IPythonAction(code=code, timeout=60))
    assert isinstance(obs, IPythonObservation), obs
    return obs.content


def _holders(runtime: LocalRuntime | None = None) -> list[int]:
    """The pids of the namespace holders (seen from here, outside every sandbox): `runtime`'s
    own, or every session's (other tests' sessions start and end meanwhile)."""
    server = runtime._proc.pid if runtime is not None and runtime._proc is not None else None
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if any("# sandbox-net-holder" in part for part in proc.info["cmdline"] or []):
            with contextlib.suppress(psutil.Error):
                if server is None or server in {p.pid for p in proc.parents()}:
                    found.append(proc.pid)
    return found


@pytest.mark.browser
@pytest.mark.skipif(
    browser_unavailable_reason() is not None and not os.environ.get("CI"),
    reason=str(browser_unavailable_reason()),
)
@pytest.mark.parametrize("network", ["allowlist", "off"])
async def test_a_server_started_in_the_shell_answers_the_kernel_and_the_browser(
    tmp_path: Path, network: str
) -> None:
    runtime = await _start(tmp_path, network, disable=[])
    try:
        port = 8000
        assert PAGE in await _sh(runtime, SERVE.format(page=PAGE, port=port))
        assert PAGE in await _kernel_get(runtime, f"http://127.0.0.1:{port}/")
        page = await runtime.execute(BrowseAction(action=f'goto("http://127.0.0.1:{port}/")'))
        assert isinstance(page, BrowseObservation) and not page.error, page
        assert PAGE in page.content, page
    finally:
        await runtime.close()


@pytest.fixture
def port() -> Iterator[int]:
    with outside_server() as port:
        yield port


async def test_the_agent_cannot_kill_the_bridge_and_a_restarted_shell_still_gets_out(
    tmp_path: Path, port: int
) -> None:
    runtime = await _start(tmp_path, "allowlist", disable=["browser"])
    try:
        holders = set(_holders(runtime))  # bwrap, its init, the holder, the bridge
        assert len(holders) >= 3, holders
        seen = await _sh(runtime, "ps -eo pid,args | grep -c '[s]andbox-net-holder'; echo ps-done")
        assert seen.split()[:2] == ["0", "ps-done"], seen
        await _sh(runtime, "pkill -9 -f sandbox-net-holder; pkill -9 python; kill -9 -1")
        # The shell was among what `kill -1` ended: the next command gets a new one.
        after = await _sh(runtime, fetch(f"http://localhost:{port}/again"))
        assert f"{MARKER} /again" in after and "code=200" in after, after
        assert holders <= set(_holders(runtime))  # not one of them was killed or replaced
        refused = await _sh(runtime, fetch(f"http://127.0.0.1:{port}/no"))
        assert "code=403" in refused and MARKER not in refused
        # The kernel shares the namespace, so it uses the same bridge.
        got = await _kernel_get(runtime, f"http://localhost:{port}/k", proxied=True)
        assert f"{MARKER} /k" in got, got
        # Should the bridge end all the same, the holder forks another on the port it kept.
        [bridge] = [
            p
            for p in holders
            if psutil.Process(p).parent().pid in holders - {p}
            and psutil.Process(p).parent().name().startswith("python")
        ]
        os.kill(bridge, signal.SIGKILL)
        again = await _sh(runtime, fetch(f"http://localhost:{port}/restarted"))
        assert f"{MARKER} /restarted" in again and "code=200" in again, again
        assert bridge not in _holders(runtime)
    finally:
        await runtime.close()
    # the session's end takes them along
    wait_until(lambda: not holders & set(_holders()), 30, "the namespace holders to end")
