"""The action server under hostile clients: malformed requests, stalled connections, a file
limit, subscribers that never read, and symlinks out of the artifacts folder. Each runs a real
server process (`start_server`) and talks to it over raw sockets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_raw import Reply, exchange, request
from test_server import Server, module_server, start_server, stop_server
from waiting import wait_until

from sandbox.http11 import MAX_BODY
from sandbox.protocol import MAX_TIMEOUT_S, parse_stream_event
from sandbox.stream_fanout import STREAM_BUFFER_BYTES


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A fresh server: for tests that fill its memory, its subscriber slots or its artifacts."""
    srv = start_server(tmp_path, secrets.token_urlsafe(24), "--disable", "browser")
    yield srv
    stop_server(srv)


# One server for every malformed request (per xdist worker): each must leave it answering, so
# the later requests also check that the earlier did no harm.
shared_server = module_server("--disable", "browser")


def port_of(server: Server) -> int:
    return int(str(server.ready["port"]))


def run_body(command: str, **fields: object) -> bytes:
    return json.dumps({"action": {"kind": "run", "command": command, **fields}}).encode()


def health_seconds(port: int, timeout_s: float = 30.0) -> float:
    """How long one `GET /health` takes on a fresh connection (fails if there is no 200)."""
    reply = exchange(port, request("GET", "/health"), timeout_s)
    assert reply.status == 200, reply
    return reply.seconds


# --------------------------------------------------------------------------- malformed requests

DEEP = b"[" * 10_000 + b"]" * 10_000
TOKEN = "{TOKEN}"


def _head(first_line: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join((first_line, b"Host: x", *headers)) + b"\r\n\r\n"


MALFORMED: list[tuple[str, bytes, set[int]]] = [
    ("NUL in ?path= (download)", request("GET", "/download?path=a%00b", token=TOKEN), {400}),
    ("NUL in ?path= (files)", request("GET", "/files?path=%00", token=TOKEN), {400}),
    ("NUL in ?path= (upload)", request("PUT", "/upload?path=x%00y", b"d", TOKEN), {400}),
    ("NUL in an artifact name", request("GET", "/artifacts/a%00.png", token=TOKEN), {400}),
    ("10 000-deep JSON", request("POST", "/execute", b'{"action": ' + DEEP + b"}", TOKEN), {400}),
    ("10 000-deep JSON (input)", request("POST", "/input", DEEP, TOKEN), {400}),
    ("timeout 1e308", request("POST", "/execute", run_body("true", timeout=1e308), TOKEN), {422}),
    (
        "timeout Infinity",
        request(
            "POST", "/execute", run_body("true").replace(b"}}", b', "timeout": Infinity}}'), TOKEN
        ),
        {400, 422},
    ),
    (
        "timeout NaN",
        request("POST", "/execute", run_body("true").replace(b"}}", b', "timeout": NaN}}'), TOKEN),
        {400, 422},
    ),
    (
        "timeout 1e400 (inf as a float)",
        request(
            "POST", "/execute", run_body("true").replace(b"}}", b', "timeout": 1e400}}'), TOKEN
        ),
        {400, 422},
    ),
    (
        "timeout 1 followed by 400 zeros",
        request("POST", "/execute", run_body("true", timeout=10**400), TOKEN),
        {422},
    ),
    (
        "soft_timeout 1e308",
        request("POST", "/execute", run_body("true", soft_timeout=1e308), TOKEN),
        {422},
    ),
    (
        "ipython timeout 1e308",
        request(
            "POST",
            "/execute",
            b'{"action": {"kind": "ipython", "code": "1", "timeout": 1e308}}',
            TOKEN,
        ),
        {422},
    ),
    (
        "view_range past any index",
        request(
            "POST",
            "/execute",
            json.dumps(
                {
                    "action": {
                        "kind": "edit",
                        "command": "view",
                        "path": "/x",
                        "view_range": [1, 10**30],
                    }
                }
            ).encode(),
            TOKEN,
        ),
        {422},
    ),
    ("bad method characters", _head(b"G@T /health HTTP/1.1"), {400}),
    ("unknown method", _head(b"BREW /health HTTP/1.1"), {405}),
    ("DELETE on /execute", request("DELETE", "/execute", token=TOKEN), {405}),
    ("header without a colon", _head(b"GET /health HTTP/1.1", b"no colon here"), {400}),
    ("space in a header name", _head(b"GET /health HTTP/1.1", b"Bad Name: x"), {400}),
    ("NUL in a header value", _head(b"GET /health HTTP/1.1", b"X-A: a\x00b"), {400}),
    ("no Host header", b"GET /health HTTP/1.1\r\n\r\n", {400}),
    ("100 KB header", _head(b"GET /health HTTP/1.1", b"X-Big: " + b"a" * 100_000), {400, 431}),
    ("HTTP/2 preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", {400, 401, 404, 405}),
    ("garbage", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)), {400}),
    ("truncated request line", b"GET /hea", {400}),
    ("truncated head", b"GET /health HTTP/1.1\r\nHost: x\r\n", {400}),
    ("Content-Length: abc", _head(b"POST /execute HTTP/1.1", b"Content-Length: abc"), {400}),
    ("Content-Length: -1", _head(b"POST /execute HTTP/1.1", b"Content-Length: -1"), {400}),
    (
        "two Content-Lengths",
        _head(b"POST /input HTTP/1.1", b"Content-Length: 1", b"Content-Length: 2") + b"xx",
        {400},
    ),
    (
        "body shorter than its Content-Length",
        _head(b"POST /input HTTP/1.1", b"Authorization: Bearer {TOKEN}", b"Content-Length: 100")
        + b"{}",
        {400},
    ),
    (
        "Content-Length over the body limit",
        _head(b"PUT /upload?path=big HTTP/1.1", b"Content-Length: %d" % (MAX_BODY + 1)),
        {413},
    ),
    (
        "Transfer-Encoding: gzip",
        _head(b"POST /execute HTTP/1.1", b"Transfer-Encoding: gzip") + b"abc",
        {400},
    ),
    (
        "bad chunk size",
        _head(b"POST /execute HTTP/1.1", b"Transfer-Encoding: chunked") + b"zz\r\nabc\r\n0\r\n\r\n",
        {400},
    ),
    ("non-UTF-8 byte in the target", _head(b"GET /files?path=\xff HTTP/1.1"), {400}),
    ("non-UTF-8 %-escape in ?path=", request("GET", "/files?path=%ff%fe", token=TOKEN), {400}),
    ("non-UTF-8 %-escape in the path", request("GET", "/artifacts/%ff.png", token=TOKEN), {400}),
    ("non-UTF-8 body", request("POST", "/input", b'{"text": "\xff\xfe"}', TOKEN), {400}),
    ("lone surrogate", request("POST", "/input", b'{"text": "\\ud800"}', TOKEN), {400}),
    ("JSON null", request("POST", "/execute", b"null", TOKEN), {422}),
    ("action is a string", request("POST", "/execute", b'{"action": "run"}', TOKEN), {422}),
    ("text is a list", request("POST", "/input", b'{"text": ["a"]}', TOKEN), {422}),
    (
        "command is a number",
        request("POST", "/execute", b'{"action": {"kind": "run", "command": 3}}', TOKEN),
        {422},
    ),
    ("kind is an object", request("POST", "/execute", b'{"action": {"kind": {}}}', TOKEN), {422}),
    ("empty body", request("POST", "/execute", b"", TOKEN), {400}),
    ("upload path is a directory", request("PUT", "/upload?path=.", b"x", TOKEN), {400, 409}),
    (
        "upload under a file",
        request("PUT", "/upload?path=file.txt/inner", b"x", TOKEN),
        {400, 409},
    ),
    (
        "path of 10 000 characters",
        request("GET", "/download?path=" + "a" * 10_000, token=TOKEN),
        {400, 404, 414},
    ),
    ("dot-dot artifact", request("GET", "/artifacts/..", token=TOKEN), {400}),
]


@pytest.mark.parametrize(("name", "data", "expected"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_every_malformed_request_gets_a_4xx_with_a_message(
    shared_server: Server, name: str, data: bytes, expected: set[int]
) -> None:
    server = shared_server
    (server.workspace / "file.txt").write_text("a file")
    reply = exchange(port_of(server), data.replace(b"{TOKEN}", server.token.encode()), 15)
    assert not reply.timed_out, f"{name}: no answer in 15 s"
    assert reply.status in expected, f"{name}: {reply.data[:300]!r}"
    body = reply.json()
    assert isinstance(body, dict) and body.get("error"), body
    assert health_seconds(port_of(server)) < 5  # and the server is still fine


def test_protocol_refuses_timeouts_that_are_not_finite_or_too_long() -> None:
    from pydantic import ValidationError

    from sandbox.protocol import CmdRunAction, IPythonAction, parse_action

    for bad in (float("inf"), float("nan"), 1e308, 10**400, MAX_TIMEOUT_S + 1, -1):
        with pytest.raises(ValidationError):
            CmdRunAction(command="x", timeout=bad)
        with pytest.raises(ValidationError):
            CmdRunAction(command="x", soft_timeout=bad)
        with pytest.raises(ValidationError):
            IPythonAction(code="x", timeout=bad)
    assert CmdRunAction(command="x", timeout=MAX_TIMEOUT_S).timeout == MAX_TIMEOUT_S
    with pytest.raises(ValidationError):
        parse_action('{"kind": "run", "command": "x", "timeout": Infinity}')


# --------------------------------------------------------------------------- connections


def half_sent(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(b"POST /execute HTTP/1.1\r\nHost: x\r\nContent-")
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the other end closed `sock` (without waiting for it to)."""
    if not select.select([sock], [], [], 0)[0]:
        return False
    try:
        return sock.recv(100, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


def test_seventy_half_sent_requests_do_not_lock_out_valid_ones_under_a_64_file_limit(
    tmp_path: Path,
) -> None:
    srv = start_server(tmp_path, secrets.token_urlsafe(24), "--disable", "browser", max_files=64)
    stalled: list[socket.socket] = []
    try:
        port = port_of(srv)
        for _ in range(70):
            stalled.append(half_sent(port))
        # The server has seen them all once it gives up the oldest to make room for the rest.
        wait_until(lambda: closed_by_server(stalled[0]), what="the oldest half-sent request shed")
        assert health_seconds(port, 10) < 3
        reply = exchange(
            port, request("POST", "/execute", run_body("echo still-here"), srv.token), 20
        )
        assert reply.status == 200 and b"still-here" in reply.data, reply
        for _ in range(30):  # new half-sent requests keep coming; valid ones still pass
            stalled.append(half_sent(port))
        assert health_seconds(port, 10) < 3
        # The connections given up were the oldest half-sent ones, closed without a reply.
        closed = 0
        for sock in stalled[:40]:
            sock.settimeout(5)
            try:
                got = sock.recv(100)
                closed += got == b""
            except (TimeoutError, ConnectionResetError):
                closed += 1
        assert closed == 40, got
    finally:
        for sock in stalled:
            sock.close()
        stop_server(srv)
    log = (tmp_path / "server.log").read_text()
    assert "Traceback" not in log and "out of system resource" not in log, log[-3000:]


def test_a_request_head_must_arrive_within_the_header_timeout(tmp_path: Path) -> None:
    timeouts = ("--header-timeout", "1", "--idle-timeout", "2", "--body-timeout", "1")
    srv = start_server(tmp_path, secrets.token_urlsafe(24), *timeouts)
    try:
        port = port_of(srv)
        slow = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n", 10, half_close=False)
        assert slow.status == 408 and 0.8 < slow.seconds < 4, slow
        silent = exchange(port, b"", 10, half_close=False)
        assert silent.data == b"" and 0.8 < silent.seconds < 4, silent  # nothing asked: closed
        # A kept-alive connection is closed once idle; a body that stops coming gets a 408.
        kept = exchange(port, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", 10, half_close=False)
        assert kept.statuses == [200] and 1.5 < kept.seconds < 5, kept
        stuck = exchange(
            port,
            request("POST", "/input", b'{"te', srv.token).replace(b"Length: 4", b"Length: 9"),
            10,
            half_close=False,
        )
        assert stuck.status == 408 and 0.8 < stuck.seconds < 4, stuck
    finally:
        stop_server(srv)


def test_a_client_that_trickles_its_head_is_cut_at_the_header_timeout(tmp_path: Path) -> None:
    srv = start_server(tmp_path, secrets.token_urlsafe(24), "--header-timeout", "1")
    try:
        with socket.create_connection(("127.0.0.1", port_of(srv)), timeout=10) as sock:
            head = b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
            reply, sent = b"", 0
            for byte in head:  # 14 s at this pace: the header timeout (1 s) must cut it short
                try:
                    sock.sendall(bytes([byte]))
                except OSError:
                    break
                sent += 1
                time.sleep(0.1)  # scripted delay: the client under test trickles a byte at a time
                if select.select([sock], [], [], 0)[0]:  # the server answered (408) and closed
                    break
            sock.settimeout(5)
            try:
                while chunk := sock.recv(4096):
                    reply += chunk
            except OSError:
                pass
        assert Reply(reply, False, 0).status == 408
        assert sent < len(head) // 2, f"the server let {sent} trickled bytes in"
    finally:
        stop_server(srv)


# --------------------------------------------------------------------------- streaming


def open_stream(port: int, token: str) -> socket.socket:
    """A `/stream` subscriber that reads nothing: a small receive buffer, never drained."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request("GET", "/stream", token=token).replace(b"close", b"keep-alive"))
    return sock


def flood(port: int, token: str, megabytes: int) -> float:
    """Seconds for a command printing `megabytes` MB (fails unless it finishes with exit 0)."""
    line = "0123456789abcdefghijklmnopqrstuvwxyz" * 2
    command = f"yes {line} | head -c {megabytes}000000; echo; echo done-flood"
    reply = exchange(port, request("POST", "/execute", run_body(command, timeout=600), token), 300)
    assert reply.status == 200, reply.data[:500]
    observation = reply.json()["observation"]  # type: ignore[index]
    assert observation["exit_code"] == 0 and "done-flood" in observation["content"], observation
    return reply.seconds


def rss_mb(port: int) -> float:
    reply = exchange(port, request("GET", "/health"), 30)
    return float(reply.json()["rss_mb"])  # type: ignore[index]


def test_subscribers_that_never_read_cost_bounded_memory_and_no_latency(server: Server) -> None:
    port, token = port_of(server), server.token
    baseline_s = flood(port, token, 100)
    rss_before = rss_mb(port)
    streams = [open_stream(port, token) for _ in range(3)]
    latencies: list[float] = []
    rss_seen: list[float] = []
    stop = threading.Event()
    slow = open_stream(port, token)  # and one that reads, slowly

    def sip() -> None:
        slow.settimeout(1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                slow.recv(16384)
            time.sleep(0.02)  # scripted delay: this subscriber reads, but slowly

    def probe() -> None:
        while not stop.is_set():
            reply = exchange(port, request("GET", "/health"), 30)
            latencies.append(reply.seconds)
            if reply.status == 200:
                rss_seen.append(float(reply.json()["rss_mb"]))  # type: ignore[index]
            time.sleep(0.1)  # scripted delay: a health probe every 0.1 s during the flood

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    sipper = threading.Thread(target=sip, daemon=True)
    sipper.start()
    try:
        with_streams_s = flood(port, token, 100)
    finally:
        stop.set()
        prober.join(60)
        sipper.join(60)
        for sock in [*streams, slow]:
            sock.close()
    after_s = health_seconds(port)
    again_s = flood(port, token, 100)
    figures = {
        "baseline_s": baseline_s,
        "with_streams_s": with_streams_s,
        "health_max_s": max(latencies),
        "health_after_s": after_s,
        "again_s": again_s,
        "rss_before": rss_before,
        "rss_max": max(rss_seen),
    }
    print(figures)
    # Against the flood's own time in this run: a server whose loop blocked behind the streams
    # would answer a health check only as the flood ended (latency ~ baseline_s).
    assert max(latencies) < baseline_s / 4, figures
    assert after_s < baseline_s / 10, figures
    assert max(rss_seen) - rss_before < 80, figures
    assert again_s < 3 * baseline_s + 5, figures
    assert with_streams_s < 3 * baseline_s + 10, figures


def read_stream(sock: socket.socket, quiet_s: float = 2.0) -> list[dict[str, object]]:
    """The NDJSON events of a chunked `/stream` reply, read until it has been quiet a while."""
    sock.settimeout(quiet_s)
    data = bytearray()
    try:
        while chunk := sock.recv(1 << 20):
            data += chunk
    except TimeoutError:
        pass
    _, _, body = bytes(data).partition(b"\r\n\r\n")
    payload = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        payload += rest[:size]
        body = rest[size + 2 :]
    return [json.loads(line) for line in payload.splitlines() if line.strip()]


def test_a_slow_subscriber_skips_ahead_with_a_marker(server: Server) -> None:
    port, token = port_of(server), server.token
    sock = open_stream(port, token)
    try:
        exchange(port, request("POST", "/execute", run_body("echo warm"), token))
        flood(port, token, 20)
        events = read_stream(sock)
    finally:
        sock.close()
    for event in events:
        parse_stream_event(event)  # every line is a valid stream event
    markers = [e for e in events if e["kind"] == "output" and "skipped" in str(e["data"])]
    assert markers, [str(e)[:100] for e in events[:5]]
    assert "this reader fell behind" in str(markers[0]["data"])
    delivered = sum(len(str(e.get("data", ""))) for e in events)
    assert delivered < 4 * STREAM_BUFFER_BYTES + 2_000_000, delivered  # not the 20 MB
    finished = [e for e in events if e["kind"] == "finished"]
    assert finished and finished[-1]["exit_code"] == 0  # command ends are never skipped
    assert events[-1]["kind"] == "finished"
    seqs = [int(str(e["seq"])) for e in events]
    assert seqs == sorted(seqs)


def test_fanout_costs_the_same_per_event_however_far_behind_a_subscriber_is() -> None:
    from sandbox.protocol import CommandFinished, OutputChunk
    from sandbox.stream_fanout import Fanout

    loop = asyncio.new_event_loop()
    try:
        fanout = Fanout(loop, buffer_bytes=64 * 1024)
        subscribers = [fanout.subscribe() for _ in range(3)]
        chunk = OutputChunk(seq=1, command="flood", data="x" * 1000)

        def publish(count: int) -> float:  # in CPU time: a busy machine's preemption is not cost
            start = time.thread_time()
            for _ in range(count):
                fanout.publish(chunk)
            return time.thread_time() - start

        publish(1000)  # warm
        few, many = publish(2_000), publish(40_000)
        assert many < 20 * 3 * few, (few, many)  # 20 times the events: about 20 times the time
        assert all(s.buffered <= 64 * 1024 for s in subscribers)
        fanout.publish(CommandFinished(seq=2, command="flood", exit_code=0))
        fanout.publish(OutputChunk(seq=3, command="next", data="tail"))
        fanout.close()

        async def drain() -> bytes:
            return b"".join([part async for part in subscribers[0].chunks()])

        lines = [json.loads(line) for line in loop.run_until_complete(drain()).splitlines()]
        assert "skipped: this reader fell behind" in lines[0]["data"]
        assert lines[-2:] == [
            {"kind": "finished", "seq": 2, "command": "flood", "exit_code": 0, "cwd": None},
            {"kind": "output", "seq": 3, "command": "next", "data": "tail", "source": "bash"},
        ]
        assert len(lines) < 80  # the 43 000 chunks were skipped, not queued
    finally:
        loop.close()


def test_subscribers_beyond_the_cap_close_the_oldest(server: Server) -> None:
    from sandbox.stream_fanout import MAX_SUBSCRIBERS

    port, token = port_of(server), server.token
    socks = [open_stream(port, token) for _ in range(MAX_SUBSCRIBERS + 1)]
    try:
        exchange(port, request("POST", "/execute", run_body("echo hello-all"), token))
        socks[0].settimeout(5)
        first = b""
        while chunk := socks[0].recv(65536):
            first += chunk
        assert first.endswith(b"0\r\n\r\n")  # a clean end of the chunked reply, then EOF
        newest = read_stream(socks[-1], 1.0)
        assert any("hello-all" in str(e.get("data")) for e in newest)
    finally:
        for sock in socks:
            sock.close()


# --------------------------------------------------------------------------- artifacts


def test_artifacts_do_not_follow_symlinks_out_of_their_folder(server: Server) -> None:
    secret = "outside-" + secrets.token_hex(8)
    (server.workspace.parent / "secret.txt").write_text(secret)
    server.artifacts.mkdir(exist_ok=True)
    (server.artifacts / "leak.png").symlink_to(server.workspace.parent / "secret.txt")
    (server.artifacts / "dir").symlink_to(server.workspace.parent)
    (server.artifacts / "real.png").write_bytes(b"png")
    (server.artifacts / "alias.png").symlink_to(server.artifacts / "real.png")
    port = port_of(server)
    for name in ("leak.png", "dir"):
        reply = exchange(port, request("GET", f"/artifacts/{name}", token=server.token))
        assert reply.status in (403, 404) and secret.encode() not in reply.data, reply
    leak = exchange(port, request("GET", "/artifacts/leak.png", token=server.token))
    assert leak.status == 403 and b"outside" in leak.data
    alias = exchange(port, request("GET", "/artifacts/alias.png", token=server.token))
    assert alias.status == 200 and alias.data.endswith(b"\r\n\r\npng")
