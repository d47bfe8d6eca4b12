"""A scripted OpenAI-compatible chat server on 127.0.0.1: the one stand-in for an LLM in tests.

It serves `POST /v1/chat/completions` (and `/chat/completions`) and `GET /v1/models`, so
requests go through litellm's real HTTP path. In a test (sync, or inside a running event loop:
the server runs in its own threads)::

    with ScriptedLLMServer([{"text": "hi"}]) as server:        # or: async with ...
        ...  # model "openai/test-model", api_base server.base_url, any api_key
        assert server.requests[0]["messages"][-1]["content"] == "hello"

From a shell: `python -m workbench.testing.llm_server SCRIPT.json [--port P]` prints
`LLM SERVER http://127.0.0.1:PORT/v1` and serves until killed.

Script format (JSON): a list of steps, or `{"steps": [...], "default": STEP}`. Each request
consumes the next step; when the steps run out, `default` answers every further request (with
no default, the server answers 400 "script exhausted"). Two more keys of the object form:
`max_prompt_tokens: N` refuses every request over N tokens (counted with tiktoken's cl100k_base
as OpenAI counts chat requests) with OpenAI's HTTP 400 `context_length_exceeded` error, taking
no step (`.refused` counts them); `without_tools: STEP` answers every request that offers no
tools (a summary call) out of turn. `routes: [{"match": TEXT, "steps": [...], "default": STEP}]`
serves many sessions at once (an eval's trials): a conversation whose first user message
holds a route's TEXT takes that route's steps from the first, on its own (conversations are
told apart by their first two messages, the system prompt naming the workspace); other
requests take the top-level steps. A step is an object with:

- `text`: the assistant's text.
- `tool_calls`: `[{"name": "execute_bash", "arguments": {...}, "id": optional}]`; `arguments`
  may be a string, sent raw (so it can be malformed JSON).
- `error`: an HTTP status (400-599) to answer with; `body` replaces OpenAI's error object and
  `headers` adds response headers (e.g. `{"Retry-After": "0"}`).
- `disconnect`: true closes the connection without an answer.
- `stream`: true answers as server-sent events (as does any request with `"stream": true`);
  text and tool-call arguments are split into pieces of `chunk_chars` (default 4) characters,
  `chunk_delay_s` apart. Usage comes in a final chunk when the request asks for it
  (`stream_options.include_usage`).
- `delay_s`: wait this long before answering.
- `hang`: true never answers: the request is read and left open until the server stops.
- `held`: true answers once the test calls `server.release()` (not at all if the server stops
  first): a reply that comes exactly when the test is ready, however slow the machine.
- `usage`: `{"prompt_tokens": N, "completion_tokens": M}`; missing numbers are estimated as
  characters / 4 of the request's messages and of the reply. `null` sends no usage at all.
- `finish_reason`: defaults to "tool_calls" when there are tool calls, else "stop".
- `repeat`: answer this many requests in a row with this step (default 1).

Every request's JSON body is kept in `.requests` and its headers (lower-case names) in
`.headers`, in order, so tests can check the whole history, the tools and the Authorization.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from workbench.testing.scripts import (
    Script,
    ScriptError,
    Step,
    completion_body,
    conversation_of,
    error_body,
    parse_script,
    prompt_tokens,
    stream_chunks,
    too_long_body,
)

__all__ = ["ScriptError", "ScriptedLLMServer", "main"]

_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_MODEL_PATHS = ("/v1/models", "/models")


class ScriptedLLMServer:
    """An OpenAI-compatible chat server answering from a script, in background threads."""

    def __init__(self, script: Any, *, port: int = 0) -> None:
        self.script: Script = parse_script(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.refused: list[int] = []
        """The numbers (1-based, among `requests`) of requests refused for their length."""
        self.tokens: list[int] = []
        """Each request's tokens, when `max_prompt_tokens` is set."""
        self._port = port
        self._lock = threading.Lock()
        self._position = 0  # index of the current step
        self._used = 0  # requests answered by the current step
        self._routed: dict[str, list[int]] = {}  # conversation -> [position, used]
        self._httpd: _HTTPServer | None = None
        self.stopping = threading.Event()
        """Set by stop(): what `hang` steps wait for."""
        self._released = threading.Event()
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> ScriptedLLMServer:
        """Bind 127.0.0.1 (port 0: any free port) and serve in a daemon thread."""
        if self._httpd is not None:
            return self
        self.stopping.clear()
        self._httpd = _HTTPServer(("127.0.0.1", self._port), _Handler, self)
        self._port = int(self._httpd.server_address[1])  # kept after stop() (refused-port tests)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-llm-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def release(self) -> None:
        """Let the requests waiting on `held` steps (and any later ones) be answered."""
        self._released.set()

    def wait_released(self) -> bool:
        """Wait for `release()`; False if the server stopped instead."""
        while not self._released.wait(0.05):
            if self.stopping.is_set():
                return False
        return True

    def stop(self) -> None:
        """Stop serving and close the socket (safe to call twice)."""
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self.stopping.set()
        httpd.shutdown()
        httpd.server_close()
        httpd.close_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> ScriptedLLMServer:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await asyncio.to_thread(self.stop)

    # -- what tests look at

    @property
    def port(self) -> int:
        """The bound port (after start(); still known after stop())."""
        if self._port == 0:
            raise RuntimeError("the scripted LLM server has not started; call start() first")
        return self._port

    @property
    def url(self) -> str:
        """The server's root URL, e.g. http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style API base, e.g. http://127.0.0.1:PORT/v1."""
        return f"{self.url}/v1"

    def llm_env(
        self, model: str = "openai/test-model", api_key: str = "test-key"
    ) -> dict[str, str]:
        """Environment variables that point workbench (a CLI subprocess, say) at this server."""
        return {"LLM_MODEL": model, "LLM_BASE_URL": self.base_url, "LLM_API_KEY": api_key}

    @property
    def remaining(self) -> int:
        """Scripted requests left before the default step (or exhaustion) takes over."""
        with self._lock:
            steps = self.script.steps[self._position :]
            return sum(step.repeat for step in steps) - (self._used if steps else 0)

    # -- serving

    def _record(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Step | None]:
        """Record a request and take the step that answers it (None: script exhausted)."""
        limit = self.script.max_prompt_tokens
        tokens = prompt_tokens(body) if limit is not None else 0
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            number = len(self.requests)
            if limit is not None:
                self.tokens.append(tokens)
                if tokens > limit:
                    self.refused.append(number)
                    return number, Step(error=400, body=too_long_body(tokens, limit))
            if not body.get("tools") and self.script.without_tools is not None:
                return number, self.script.without_tools
            if self.script.routes:
                user, key = conversation_of(body)
                for route in self.script.routes:
                    if route.match in user:
                        at = self._routed.setdefault(key, [0, 0])
                        return number, _advance(route.steps, at, route.default)
            steps = self.script.steps
            if self._position < len(steps):
                step = steps[self._position]
                self._used += 1
                if self._used >= step.repeat:
                    self._position, self._used = self._position + 1, 0
                return number, step
            return number, self.script.default


def _advance(steps: list[Step], at: list[int], default: Step | None) -> Step | None:
    """The step at `at` ([position, used]) of `steps`, moving `at` on; then `default`."""
    if at[0] < len(steps):
        step = steps[at[0]]
        at[1] += 1
        if at[1] >= step.repeat:
            at[0], at[1] = at[0] + 1, 0
        return step
    return default


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(
        self, address: tuple[str, int], handler: type[_Handler], owner: ScriptedLLMServer
    ) -> None:
        self.owner = owner
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.connections_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that left: not news
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """End kept-alive connections too, so a stopped server really is gone."""
        with self.connections_lock:
            connections, self.connections = self.connections, set()
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else a small reply can wait ~40 ms for a delayed ACK
    timeout = 60  # an idle keep-alive connection is closed after this
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: tests read stdout and stderr."""

    def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        """List one model, as `/v1/models` does."""
        if self.path.split("?")[0] not in _MODEL_PATHS:
            self._error(404, f"no route {self.path}")
            return
        models = [{"id": "scripted", "object": "model", "created": 0, "owned_by": "workbench"}]
        self._send_json(200, {"object": "list", "data": models})

    def do_POST(self) -> None:
        """Answer a chat completion from the script."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.split("?")[0] not in _CHAT_PATHS:
            self._error(404, f"no route {self.path}")
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "the request body is not JSON")
            return
        if not isinstance(body, dict):
            self._error(400, "the request body is not a JSON object")
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        number, step = self.server.owner._record(body, headers)
        if step is None:
            self._error(400, f"scripted LLM server: the script is exhausted (request {number})")
            return
        if step.delay_s:
            time.sleep(step.delay_s)
        if step.held and not self.server.owner.wait_released():
            self.close_connection = True
            return
        if step.hang:
            self.server.owner.stopping.wait()
            self.close_connection = True
            return
        if step.disconnect:
            self.close_connection = True
            return
        if step.error is not None:
            self._send_json(step.error, error_body(step), step.headers)
        elif step.stream or body.get("stream") is True:
            self._stream(step, body, number)
        else:
            self._send_json(200, completion_body(step, body, number), step.headers)

    def _stream(self, step: Step, body: dict[str, Any], number: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in step.headers.items():
            self.send_header(name, value)
        self.end_headers()
        events = [json.dumps(chunk) for chunk in stream_chunks(step, body, number)]
        for i, event in enumerate([*events, "[DONE]"]):
            if i and step.chunk_delay_s:
                time.sleep(step.chunk_delay_s)
            data = f"data: {event}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def main(argv: list[str] | None = None) -> int:
    """Serve a script file until SIGTERM/SIGINT; print the URL first."""
    parser = argparse.ArgumentParser(
        prog="python -m workbench.testing.llm_server",
        description="Serve a scripted OpenAI-compatible chat API on 127.0.0.1.",
    )
    parser.add_argument("script", help="JSON script file (see the module docstring), or -")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free port)")
    args = parser.parse_args(argv)
    try:
        text = sys.stdin.read() if args.script == "-" else Path(args.script).read_text()
        server = ScriptedLLMServer(json.loads(text), port=args.port)
    except (OSError, ValueError) as exc:
        print(f"llm_server: cannot use script {args.script}: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        server.start()
    except OSError as exc:
        print(f"llm_server: cannot listen on port {args.port}: {exc}", file=sys.stderr)
        return 2
    print(f"LLM SERVER {server.base_url}", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
