"""A real MCP server for the tests, on the SDK's high-level `MCPServer`: over stdio by default,
over streamable HTTP with `--http PORT`.

Tools: `add`, `boom` (raises), `whoami` (where and as whom it runs), `picture` (a PNG), `die`
(the process exits mid-call), `secret_seen` (whether an environment variable reached it) and
`write_text` (writes a file: what it may write).
"""

from __future__ import annotations

import base64
import json
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import TextContent

# A 1x1 red PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

app = MCPServer("demo")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def boom(why: str) -> str:
    """Always fails, with `why` in its error."""
    raise ValueError(f"boom: {why}")


@app.tool()
def whoami() -> str:
    """Where and as whom this server runs, as JSON."""
    return json.dumps(
        {
            "pid": os.getpid(),
            "ppid": os.getppid(),
            "cwd": os.getcwd(),
            "uid": os.getuid(),
            "pidns": os.readlink("/proc/self/ns/pid"),
            "session": os.environ.get("SANDBOX_SESSION", ""),
        }
    )


@app.tool()
def picture() -> list[TextContent | Image]:
    """A tiny red square and a caption."""
    return [TextContent(type="text", text="a red square"), Image(data=PNG, format="png")]


@app.tool()
def flood(megabytes: int) -> list[TextContent | Image]:
    """A text answer of `megabytes` MB, and a picture whose data is not base64."""
    text = "".join(f"line {n:09d}\n" for n in range(megabytes * 1024 * 1024 // 15))
    return [TextContent(type="text", text=text), Image(data=b"", format="png")]


@app.tool()
def die() -> str:
    """The server process exits during the call."""
    sys.stderr.write("demo server: dying on request\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
def secret_seen(name: str) -> str:
    """The value of environment variable `name` here ("" when unset)."""
    return os.environ.get(name, "")


@app.tool()
def write_text(path: str, text: str) -> str:
    """Write `text` to the file `path`: "ok", or the error."""
    try:
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return "ok"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
