"""Fuzz of the action server's HTTP API: 10 000 generated requests against a real server.

Requests are built from a fixed seed out of methods, targets, paths, headers, framings and
bodies, well-formed and not, and sent one per connection over raw sockets (the sending side
is closed after, so a request that says it has more body than it sends is cut, not waited
on). Every one must get a reply within its timeout and no reply may be a 5xx. A marker file
outside the workspace (reachable by `..`, absolute paths and symlinks in the workspace and the
artifacts folder) must never show up in a reply, and nothing outside may change.

The executors run with the agent's rights by design (containing them is bubblewrap's or
Docker's job), so generated actions only run harmless commands and edit workspace files; the
HTTP file endpoints are where the server itself confines paths, and they get every path.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import pytest
from http_raw import Reply, exchange
from test_server import Server, start_server, stop_server

SEED = 20261123
REQUESTS = 10_000
WORKERS = 8
TIMEOUT_S = 20.0


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Server, Path, str]]:
    """A server whose workspace and artifacts hold links to an outside folder with a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = "SECRET-" + secrets.token_hex(12)
    (outside / "secret.txt").write_text(secret)
    (outside / "keep.txt").write_text("do not touch")
    srv = start_server(
        tmp_path, secrets.token_urlsafe(24), "--disable", "jupyter", "--disable", "browser"
    )
    (srv.workspace / "notes.txt").write_text("hello\nworld\n")
    (srv.workspace / "sub").mkdir()
    (srv.workspace / "sub" / "a.txt").write_text("a")
    (srv.workspace / "out_link").symlink_to(outside)
    (srv.workspace / "secret_link").symlink_to(outside / "secret.txt")
    (srv.workspace / "loop").symlink_to(srv.workspace / "loop")
    os.mkfifo(srv.workspace / "fifo")
    srv.artifacts.mkdir(exist_ok=True)
    (srv.artifacts / "ok.png").write_bytes(b"\x89PNG")
    (srv.artifacts / "leak.png").symlink_to(outside / "secret.txt")
    yield srv, outside, secret
    stop_server(srv)


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file under `folder`: (size, mtime in ns, bytes)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(folder))] = (info.st_size, info.st_mtime_ns, path.read_bytes())
    return found


ROUTES = {
    "/health": b"GET",
    "/execute": b"POST",
    "/input": b"POST",
    "/stream": b"GET",
    "/files": b"GET",
    "/download": b"GET",
    "/upload": b"PUT",
    "/artifacts": b"GET",
}
GOOD_PATHS = ["notes.txt", "sub/a.txt", "sub", ".", "new/dir/file.bin", "./notes.txt"]
BAD_PATHS = [
    "", "..", "../outside/secret.txt", "{outside}/secret.txt", "{outside}/new.txt", "{outside}",
    "/etc/passwd", "out_link/secret.txt", "out_link/new.txt", "secret_link", "loop", "fifo",
    "sub/../../outside/secret.txt", "{workspace}/notes.txt", "notes.txt/inner", "a" * 300,
    "b" * 5000, "é/ü.txt", "\x00", "a\x00b", "%2e%2e/outside", "/proc/self/environ", "~",
    "$HOME", "*", "sub//a.txt", "sub/a.txt\x00.png",
]  # fmt: skip
ARTIFACTS = [
    "ok.png", "leak.png", "missing.png", "..", ".hidden", "a/b", "%2f", "%00", "%ff", "x" * 500,
    "", "%2e%2e%2fws%2fnotes.txt",
]  # fmt: skip
ODD_TARGETS = [
    "*", "http://sandbox/health", "//", "/health/../execute", "/%68ealth", "/nowhere",
    "/" + "a" * 3000, "/files?path=%ff%fe&x=%", "/files?" + "&".join(["k=v"] * 70),
    "/execute?x=1", "/artifacts", "/artifacts/", "/health?" + "q" * 1000,
]  # fmt: skip
ODD_METHODS = [
    "DELETE", "HEAD", "OPTIONS", "PATCH", "BREW", "get", "G@T", "GET GET", "", "X" * 100,
    "CONNECT", "TRACE", "POST", "PUT", "GET",
]  # fmt: skip
ODD_HEADERS = [
    b"Bad Header: x", b"NoColon", b"X-Nul: a\x00b", b": empty", b"X-Big: " + b"b" * 70_000,
    b"X-Bin: \xff\xfe", b"X-Fold: a\r\n continued", b"Host: second",
    b"Connection: upgrade\r\nUpgrade: h2c", b"Expect: 100-continue", b"Connection: close",
    b"Authorization: Bearer wrong", b"Authorization: Basic eDp5", b"Authorization: Bearer",
]  # fmt: skip
ODD_FRAMING = [
    b"Content-Length: abc", b"Content-Length: -5", b"Content-Length: 1e3",
    b"Content-Length: 1\r\nContent-Length: 2", b"Transfer-Encoding: gzip",
    b"Transfer-Encoding: chunked", b"Content-Length: 99999999999999999999",
    b"Content-Length: 268435457", b"Content-Length: {more}", b"Content-Length: {less}",
]  # fmt: skip
ODD_NUMBERS: list[object] = [0, -1, 1e308, 10**400, 86_401, "5", [], {}, True, 2**63, None]
RAW_NUMBERS = [b"Infinity", b"-Infinity", b"NaN", b"1e400", b"1" + b"0" * 400, b"-0"]
COMMANDS = ["echo fuzz", "true", "pwd", "printf '%s' x", "false", "echo $((1+2))", "ls", ""]


class Generator:
    """Random HTTP requests for the server's API, from one seed: each part of a request is
    well-formed unless spoiled on its own, so about half the requests are good ones."""

    def __init__(self, seed: int, token: str, workspace: Path, outside: Path) -> None:
        self.rng = random.Random(seed)
        self.token = token
        self.workspace = workspace
        places = {"outside": str(outside), "workspace": str(workspace)}
        self.bad_paths = [path.format(**places) for path in BAD_PATHS]

    def spoil(self, chance: float = 0.08) -> bool:
        """Whether to spoil this part of the request."""
        return self.rng.random() < chance

    # ------------------------------------------------------------------ the request line

    def target(self) -> str:
        rng = self.rng
        if self.spoil(0.1):
            return rng.choice(ODD_TARGETS)
        endpoint = rng.choice(list(ROUTES))
        if endpoint == "/artifacts":
            return "/artifacts/" + (rng.choice(ARTIFACTS) if self.spoil(0.5) else "ok.png")
        if endpoint in ("/files", "/download", "/upload"):
            raw = rng.choice(self.bad_paths if self.spoil(0.4) else GOOD_PATHS)
            return endpoint + "?path=" + (raw if self.spoil(0.2) else quote(raw))
        return endpoint

    def method(self, target: str) -> bytes:
        if self.spoil(0.1):
            return self.rng.choice(ODD_METHODS).encode()
        path = target.split("?")[0]
        return ROUTES.get("/artifacts" if path.startswith("/artifacts/") else path, b"GET")

    # ------------------------------------------------------------------ headers and framing

    def headers(self, body: bytes) -> tuple[list[bytes], bytes]:
        """The header lines, and the body as framed (by length, chunked, or wrongly)."""
        rng = self.rng
        lines = [b"Host: sandbox"] if not self.spoil(0.03) else []
        if not self.spoil(0.05):
            lines.append(b"Authorization: Bearer " + self.token.encode())
        if self.spoil(0.1):
            lines.append(rng.choice(ODD_HEADERS))
        framing = rng.random()
        if self.spoil(0.08):
            odd = rng.choice(ODD_FRAMING)
            odd = odd.replace(b"{more}", b"%d" % (len(body) + 50))
            lines.append(odd.replace(b"{less}", b"%d" % max(0, len(body) - 3)))
        elif framing < 0.1:
            lines.append(b"Transfer-Encoding: chunked")
            cut = rng.randrange(len(body) + 1)
            parts = [body[:cut], body[cut:]]
            body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts if p) + b"0\r\n\r\n"
        elif body or framing < 0.5:
            lines.append(b"Content-Length: %d" % len(body))
        return lines, body

    # ------------------------------------------------------------------ bodies

    def action(self) -> dict[str, object]:
        rng = self.rng
        kind = rng.choice(["run", "run", "run", "edit", "edit", "set_env", "ipython", "browse"])
        if self.spoil(0.05):
            kind = rng.choice(["teleport", "", "RUN"])
        action: dict[str, object] = {"kind": kind}
        if kind == "run":
            action["command"] = rng.choice(COMMANDS)
            if rng.random() < 0.2:
                action["is_input"] = rng.choice([True, False])
            if rng.random() < 0.3:
                action["timeout"] = rng.choice(ODD_NUMBERS) if self.spoil(0.5) else 5
            if rng.random() < 0.3:
                action["soft_timeout"] = rng.choice(ODD_NUMBERS) if self.spoil(0.5) else 2
        elif kind == "edit":
            name = rng.choice(["notes.txt", "sub/a.txt", "made.txt", "sub", "new/deep.txt"])
            action["command"] = rng.choice(["view", "create", "str_replace", "insert", "undo_edit"])
            action["path"] = str(self.workspace / name) if not self.spoil(0.2) else "rel.txt"
            for field in ("file_text", "old_str", "new_str"):
                if rng.random() < 0.4:
                    action[field] = rng.choice(["x", "hello", "", "é\n"])
            if rng.random() < 0.3:
                action["insert_line"] = rng.choice(ODD_NUMBERS) if self.spoil(0.5) else 1
            if rng.random() < 0.3:
                action["view_range"] = [1, rng.choice(ODD_NUMBERS)] if self.spoil(0.5) else [1, 2]
        elif kind == "set_env":
            name = "FUZZ_" + rng.choice(["A", "B1", "x y", "é", "-"])
            action["env"] = {name: rng.choice(["v", "a'b\"c$(d)`e`", "\n", ""])}
        elif kind == "ipython":
            action["code"] = "1 + 1"
        elif kind == "browse":
            action["action"] = 'goto("http://127.0.0.1:1")'
        if self.spoil(0.05):
            action[rng.choice(["extra", "command", "kind"])] = rng.choice([1, None, [], {}])
        return action

    def body(self, target: str) -> bytes:
        rng = self.rng
        text = b""
        if target.startswith("/execute"):
            value: object = {"action": self.action()}
            if self.spoil(0.03):
                value = rng.choice([None, [], "x", {"action": None}, {"actions": []}])
            text = json.dumps(value).encode()
            if self.spoil(0.05) and text.endswith(b"}}"):
                text = text[:-2] + b', "timeout": ' + rng.choice(RAW_NUMBERS) + b"}}"
        elif target.startswith("/input"):
            text = json.dumps({"text": rng.choice(["C-c", "y", "", "é" * 10])}).encode()
            if self.spoil(0.05):
                text = json.dumps({"text": "x" * 70_000}).encode()
        elif target.startswith("/upload"):
            text = os.urandom(rng.choice([0, 1, 100, 5000]))
        if self.spoil(0.1):
            text = self.mangle(text)
        return text

    def mangle(self, text: bytes) -> bytes:
        rng = self.rng
        roll = rng.random()
        if roll < 0.25 or not text:
            return rng.choice([b"[" * 10_000 + b"]" * 10_000, b'{"text": "\\ud800"}', b"\xff\xfe"])
        if roll < 0.5:
            return text[: rng.randrange(len(text))]
        flipped = bytearray(text)
        for _ in range(3):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        return bytes(flipped)

    # ------------------------------------------------------------------ whole requests

    def request(self) -> bytes:
        """One request's bytes (now and then cut short, doubled, or noise)."""
        rng = self.rng
        target = self.target()
        body = self.body(target)
        lines, framed = self.headers(body)
        version = b"HTTP/1.1"
        if self.spoil(0.03):
            version = rng.choice([b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1x", b"", b"HTTP/9.9"])
        raw_target = target.encode("utf-8", "surrogateescape")
        if self.spoil(0.02):
            raw_target += bytes([rng.randrange(256)])
        first = b" ".join(part for part in (self.method(target), raw_target, version) if part)
        data = b"\r\n".join([first, *lines]) + b"\r\n\r\n" + framed
        roll = rng.random()
        if roll < 0.02:
            return data[: rng.randrange(1, len(data))]
        if roll < 0.04:
            return data + b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"  # a pipelined second one
        if roll < 0.05:
            return os.urandom(rng.randrange(1, 200))
        return data


def test_ten_thousand_generated_requests_get_no_5xx_no_hang_and_no_escape(
    world: tuple[Server, Path, str],
) -> None:
    server, outside, secret = world
    before = snapshot(outside)
    generator = Generator(SEED, server.token, server.workspace, outside)
    requests = [generator.request() for _ in range(REQUESTS)]
    port = int(str(server.ready["port"]))
    start = time.monotonic()
    with ThreadPoolExecutor(WORKERS) as pool:
        replies = list(pool.map(lambda data: exchange(port, data, TIMEOUT_S), requests))
    elapsed = time.monotonic() - start

    def failure(kind: str, index: int, reply: Reply) -> str:
        return f"{kind}: request {index} {requests[index][:300]!r} -> {reply.data[:300]!r}"

    hangs = [failure("hang", i, r) for i, r in enumerate(replies) if r.timed_out]
    silent = [failure("no reply", i, r) for i, r in enumerate(replies) if r.status is None]
    errors = [
        failure("5xx", i, r) for i, r in enumerate(replies) if any(s >= 500 for s in r.statuses)
    ]
    leaks = [failure("leak", i, r) for i, r in enumerate(replies) if secret.encode() in r.data]
    assert not hangs, hangs[:5]
    assert not errors, errors[:5]
    assert not leaks, leaks[:5]
    assert not silent, (len(silent), silent[:5])
    assert snapshot(outside) == before, "a file outside the workspace changed"
    counts: dict[int, int] = {}
    for reply in replies:
        final = [s for s in reply.statuses if s >= 200][:1]
        for status in final:
            counts[status] = counts.get(status, 0) + 1
    print(f"{REQUESTS} requests in {elapsed:.1f} s: {dict(sorted(counts.items()))}")
    assert counts.get(200, 0) > REQUESTS // 3  # many requests are good ones, and work
    assert server.proc.poll() is None
    log = (server.workspace.parent / "server.log").read_text()
    assert "Traceback" not in log, log[-3000:]
