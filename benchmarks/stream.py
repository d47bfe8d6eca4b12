"""Benchmark of `/stream` under subscribers that never read: server memory and `/health` latency.

Run: `python benchmarks/stream.py [MEGABYTES]` (default 200). Two runs of the same scenario, each
on a fresh `python -m sandbox serve`: a command prints MEGABYTES MB of output, first with no
`/stream` subscriber (the baseline), then with 3 subscribers that open `/stream` and never read
a byte. During the command `/health` is timed every 100 ms and the server's RSS read from
/proc; after it, the subscribers disconnect, `/health` is timed again and the same command
runs once more. Progress goes to stderr; the last line on stdout is ONE JSON object (seconds,
milliseconds and MB as the keys say), both runs side by side.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SUBSCRIBERS = 3
TOKEN = "benchmark-token-0123456789"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def http(port: int, method: str, path: str, body: bytes = b"", timeout_s: float = 600) -> bytes:
    """One request on its own connection; the raw reply."""
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(head.encode() + body)
        reply = bytearray()
        while chunk := sock.recv(1 << 16):
            reply += chunk
    return bytes(reply)


def health_ms(port: int) -> float:
    start = time.perf_counter()
    reply = http(port, "GET", "/health", timeout_s=600)
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    return (time.perf_counter() - start) * 1000


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def flood_s(port: int, megabytes: int) -> float:
    """Seconds for a command that prints `megabytes` MB (checked to finish with exit 0)."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz" * 2
    command = f"yes {line} | head -c {megabytes}000000; echo; echo done-flood"
    body = json.dumps({"action": {"kind": "run", "command": command, "timeout": 3600}}).encode()
    start = time.perf_counter()
    reply = http(port, "POST", "/execute", body, timeout_s=3600)
    elapsed = time.perf_counter() - start
    assert b'"exit_code":0' in reply and b"done-flood" in reply, reply[:300]
    return elapsed


class Server:
    """A fresh sandbox server in a temp workspace."""

    def __init__(self, root: Path) -> None:
        env = {**os.environ, "SANDBOX_TOKEN": TOKEN}
        command = [sys.executable, "-m", "sandbox", "serve", "--workspace", str(root / "ws")]
        command += ["--disable", "jupyter", "--disable", "browser"]
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=root
        )
        assert self.proc.stdout is not None
        readable, _, _ = select.select([self.proc.stdout], [], [], 30)
        line = self.proc.stdout.readline().decode() if readable else ""
        assert line.startswith("SANDBOX READY "), line
        self.port = int(json.loads(line.removeprefix("SANDBOX READY "))["port"])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def subscriber(port: int) -> socket.socket:
    """A `/stream` client that never reads (default socket buffers, like a stuck client)."""
    sock = socket.create_connection(("127.0.0.1", port))
    request = f"GET /stream HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    sock.sendall(request.encode())
    return sock


def scenario(subscribers: int, megabytes: int) -> dict[str, float]:
    """Figures for one run on a fresh server with `subscribers` non-reading clients."""
    with tempfile.TemporaryDirectory(prefix="bench-stream-") as tmp:
        server = Server(Path(tmp))
        try:
            http(server.port, "POST", "/execute", b'{"action": {"kind": "run", "command": "true"}}')
            rss_start = rss_mb(server.proc.pid)
            socks = [subscriber(server.port) for _ in range(subscribers)]
            time.sleep(0.3)
            during: list[float] = []
            rss_seen: list[float] = [rss_start]
            done = threading.Event()

            def probe() -> None:
                while not done.is_set():
                    during.append(health_ms(server.port))
                    rss_seen.append(rss_mb(server.proc.pid))
                    done.wait(0.1)

            prober = threading.Thread(target=probe)
            prober.start()
            command_s = flood_s(server.port, megabytes)
            done.set()
            prober.join()
            for sock in socks:
                sock.close()
            time.sleep(0.5)
            after = [health_ms(server.port) for _ in range(20)]
            rss_after = rss_mb(server.proc.pid)
            next_s = flood_s(server.port, megabytes)
        finally:
            server.stop()
    return {
        "command_s": round(command_s, 2),
        "health_during_ms_median": round(statistics.median(during), 2),
        "health_during_ms_max": round(max(during), 2),
        "health_after_ms_median": round(statistics.median(after), 2),
        "health_after_ms_max": round(max(after), 2),
        "rss_start_mb": round(rss_start, 1),
        "rss_max_mb": round(max(rss_seen), 1),
        "rss_after_mb": round(rss_after, 1),
        "next_command_s": round(next_s, 2),
    }


def main() -> dict[str, object]:
    megabytes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    log(f"baseline: {megabytes} MB with no /stream subscriber")
    baseline = scenario(0, megabytes)
    log(json.dumps(baseline))
    log(f"{SUBSCRIBERS} /stream subscribers that never read, {megabytes} MB")
    stalled = scenario(SUBSCRIBERS, megabytes)
    log(json.dumps(stalled))
    return {
        "megabytes": megabytes,
        "subscribers": SUBSCRIBERS,
        "no_subscribers": baseline,
        "non_reading_subscribers": stalled,
    }


if __name__ == "__main__":
    began = time.perf_counter()
    figures = main()
    log(f"benchmark took {time.perf_counter() - began:.1f} s")
    print(json.dumps(figures))
