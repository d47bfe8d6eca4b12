"""Benchmark of the network proxy (`network = "allowlist"`) beside a direct connection.

Run: `python benchmarks/netproxy.py [--mb 100] [--requests 200]`. Progress goes to stderr; the
last line on stdout is ONE JSON object. An HTTP server on this machine stands for the outside.
Two local runtimes (bubblewrap) run the same client inside the sandbox in the same run:

- "proxy": network "allowlist" (the session's network namespace; its one bridge, the unix
  socket, the app's proxy asking a policy that allows the host, then the server);
- "direct": network "on" (the client connects to the server itself: the floor).

Figures, each printed with its floor and the ratio: the median time of one small GET on a new
connection (plain HTTP forwarding, and through a CONNECT tunnel as HTTPS clients use it), and
the throughput of one download of `--mb` MB (plain forwarding and CONNECT), in MB/s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "sandbox"))

from net_support import outside_server  # noqa: E402

from sandbox.net_proxy import NetVerdict  # noqa: E402
from sandbox.protocol import CmdOutputObservation, CmdRunAction  # noqa: E402
from sandbox.runtimes.local import LocalRuntime  # noqa: E402

CLIENT = r"""
import json, os, socket, statistics, sys, time
port, requests, size, via = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
proxy = ("127.0.0.1", 3128)

def open_to(path, tunnel):
    if via == "direct":
        s = socket.create_connection(("127.0.0.1", port))
        return s, f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    s = socket.create_connection(proxy)
    if tunnel:
        s.sendall(f"CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(4096)
        assert head.startswith(b"HTTP/1.1 200"), head
        return s, f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    return s, f"GET http://localhost:{port}{path} HTTP/1.1\r\nHost: localhost\r\n\r\n"

def get(path, tunnel):
    s, request = open_to(path, tunnel)
    s.sendall(request.encode())
    total = 0
    while data := s.recv(1 << 20):
        total += len(data)
    s.close()
    return total

out = {}
for tunnel in (False, True):
    times = []
    for _ in range(requests):
        start = time.perf_counter()
        assert get("/small", tunnel) > 0
        times.append((time.perf_counter() - start) * 1000)
    out[f"small_ms_{'connect' if tunnel else 'http'}"] = statistics.median(times)
    start = time.perf_counter()
    got = get(f"/bytes/{size}", tunnel)
    seconds = time.perf_counter() - start
    assert got >= size, got
    out[f"download_mb_s_{'connect' if tunnel else 'http'}"] = size / 1e6 / seconds
print(json.dumps(out))
"""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def allow_all(host: str, port: int) -> NetVerdict:
    """The policy: every host allowed by a rule (its cost is the rules' match, not measured)."""
    return NetVerdict(True, "net:*")


async def measure(network: str, port: int, requests: int, size: int) -> dict[str, float]:
    """The client's figures in a runtime with `network`."""
    with tempfile.TemporaryDirectory() as folder:
        runtime = LocalRuntime(folder, isolation="bwrap", network=network, disable=["browser"])
        if runtime.net_proxy is not None:
            runtime.net_proxy.decide = allow_all
        await runtime.start()
        try:
            script = Path(folder) / "client.py"
            script.write_text(CLIENT)
            via = "direct" if network == "on" else "proxy"
            command = f"python3 client.py {port} {requests} {size} {via}"
            obs = await runtime.execute(CmdRunAction(command=command, timeout=600))
            assert isinstance(obs, CmdOutputObservation) and obs.exit_code == 0, obs
            figures: dict[str, float] = json.loads(obs.content.strip().splitlines()[-1])
            return figures
        finally:
            await runtime.close()


async def figures(megabytes: int, requests: int) -> dict[str, Any]:
    """Proxy and direct, each figure with its floor and ratio."""
    size = megabytes * 1_000_000
    with outside_server() as port:
        log(f"direct (network on), {requests} small GETs and {megabytes} MB ...")
        direct = await measure("on", port, requests, size)
        log(f"proxy (network allowlist), {requests} small GETs and {megabytes} MB ...")
        proxied = await measure("allowlist", port, requests, size)
    results: dict[str, Any] = {"mb": megabytes, "requests": requests}
    for key, floor in direct.items():
        figure = proxied[key]
        ratio = figure / floor if floor else 0.0
        results[key] = {
            "proxy": round(figure, 3),
            "direct": round(floor, 3),
            "ratio": round(ratio, 2),
        }
        if key.startswith("small_ms"):
            results[key]["added_ms"] = round(figure - floor, 3)
        log(f"{key}: proxy {figure:.3f}, direct {floor:.3f} (floor), ratio {ratio:.2f}")
    return results


def main() -> None:
    """Parse the options, measure, print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=100, help="size of the download (MB)")
    parser.add_argument("--requests", type=int, default=200, help="small GETs per figure")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(figures(args.mb, args.requests))))


if __name__ == "__main__":
    main()
