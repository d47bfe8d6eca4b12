"""The wire contract between workbench and the sandbox: actions in, observations and output out.

Every model is immutable and round-trips through JSON. `Action` and `Observation` are
discriminated unions on `kind`, so `parse_action(json)` gives back the right class or raises a
`pydantic.ValidationError` that names the bad field. `workbench` reuses these models; nothing
here imports `workbench`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from sandbox.defaults import DEFAULT_SOFT_TIMEOUT_S as DEFAULT_SOFT_TIMEOUT_S

PROTOCOL_VERSION = 1

MAX_TIMEOUT_S = 86_400.0
"""Longest timeout an action may ask for (a day)."""
MAX_LINE_NUMBER = 1_000_000_000
"""Largest line number (in either direction) an edit may name."""

Seconds = Annotated[float, Field(ge=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)]
"""A timeout: finite, 0 to `MAX_TIMEOUT_S` (the executors refuse 0 with their own message)."""
LineNumber = Annotated[int, Field(ge=-MAX_LINE_NUMBER, le=MAX_LINE_NUMBER)]
"""A line number as an edit gives it; the editor says which values make sense."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --------------------------------------------------------------------------- actions


class CmdRunAction(_Model):
    """Run one command in the persistent shell, or talk to the command already running."""

    kind: Literal["run"] = "run"
    command: str
    is_input: bool = False
    """Send `command` as text (or a key such as `C-c`) to the running process."""
    timeout: Seconds | None = None
    """Hard limit in seconds: the call returns after it with exit code -1."""
    soft_timeout: Seconds | None = None
    """Return with exit code -1 once the command prints nothing new for this long. None: the
    default (10 s) without a hard `timeout`, and no idle limit with one (it replaces it)."""

    def idle_limit(self) -> float | None:
        """The soft timeout that applies to this action, if any."""
        if self.soft_timeout is not None:
            return self.soft_timeout
        return DEFAULT_SOFT_TIMEOUT_S if self.timeout is None else None


class SetEnvAction(_Model):
    """Add environment variables to the shell session (values are never echoed back)."""

    kind: Literal["set_env"] = "set_env"
    env: dict[str, str]


EditCommand = Literal["view", "create", "str_replace", "insert", "undo_edit"]


class FileEditAction(_Model):
    """One editor command on an absolute path (the `str_replace_editor` tool)."""

    kind: Literal["edit"] = "edit"
    command: EditCommand
    path: str
    file_text: str | None = None
    old_str: str | None = None
    new_str: str | None = None
    insert_line: LineNumber | None = None
    view_range: list[LineNumber] | None = None


class IPythonAction(_Model):
    """Run a cell in the session's IPython kernel."""

    kind: Literal["ipython"] = "ipython"
    code: str
    timeout: Seconds | None = None


class BrowseAction(_Model):
    """One BrowserGym action string, e.g. `goto("http://127.0.0.1:8000")` or `click("12")`."""

    kind: Literal["browse"] = "browse"
    action: str


class BrowseTaskStartAction(_Model):
    """Start an evaluation episode of a BrowserGym task (`miniwob.click-test`) in a fresh
    browser; later `browse` actions are its steps (`sandbox/executors/browser_task.py`)."""

    kind: Literal["browse_task_start"] = "browse_task_start"
    task_id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_.-]+$")
    """`<benchmark>.<task>`, as BrowserGym names it without its `browsergym/` prefix."""
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)


class BrowseTaskScoreAction(_Model):
    """The score of the evaluation episode so far: its best reward, every reward, done."""

    kind: Literal["browse_task_score"] = "browse_task_score"


class CheckpointAction(_Model):
    """Record the workspace as it is now in its checkpoint store (`sandbox/checkpoints.py`)."""

    kind: Literal["checkpoint"] = "checkpoint"
    label: str = Field(max_length=200)
    """What the checkpoint is of, e.g. the step number."""
    max_file_bytes: int = Field(default=50 * 1024 * 1024, ge=0, le=1 << 40)
    """Files larger than this are left out (and listed as skipped)."""
    ignore: list[str] = Field(default_factory=list, max_length=1000)
    """gitignore patterns left out (caches, virtual environments); empty: the defaults."""


class RestoreAction(_Model):
    """Make the workspace what it was at a checkpoint (after a checkpoint of the present)."""

    kind: Literal["restore"] = "restore"
    commit: str = Field(pattern=r"^[0-9a-f]{40}$")


class McpBind(_Model):
    """A host path shown to one MCP server alone, at `target`: the runtime staged it at
    `source` (a path the sandbox server sees, hidden from the agent)."""

    source: str
    target: str
    writable: bool = False


class McpServerSpec(_Model):
    """How to reach one MCP server: a command over stdio (`command`, `env`), or a URL
    (streamable HTTP, with `headers`)."""

    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    """Added to the server process's environment only (never to the agent's shell)."""
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    start_timeout: Seconds = 30.0
    """How long starting it and listing its tools may take."""
    binds: list[McpBind] = Field(default_factory=list, max_length=1000)
    """Host paths this server alone sees (its program, scripts, `read_only`, `writable`)."""
    host_paths: list[str] = Field(default_factory=list, max_length=1000)
    """Paths its command names that exist on the host: those it cannot see are named in a
    notice before it starts, with the fix."""
    cache: bool = False
    """Give it a writable cache folder of its own (uv, npm, XDG) outside the workspace."""


class McpListAction(_Model):
    """Start the named MCP servers not running yet (inside the sandbox) and list their tools."""

    kind: Literal["mcp_list"] = "mcp_list"
    servers: dict[str, McpServerSpec]


class McpCallAction(_Model):
    """Call one tool of a running MCP server."""

    kind: Literal["mcp_call"] = "mcp_call"
    server: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    timeout: Seconds = 300.0


Action = Annotated[
    CmdRunAction
    | SetEnvAction
    | FileEditAction
    | IPythonAction
    | BrowseAction
    | BrowseTaskStartAction
    | BrowseTaskScoreAction
    | CheckpointAction
    | RestoreAction
    | McpListAction
    | McpCallAction,
    Field(discriminator="kind"),
]

# --------------------------------------------------------------------------- observations


class CmdOutputObservation(_Model):
    """What a shell command printed, with its exit code (-1: still running) and the cwd."""

    kind: Literal["run"] = "run"
    command: str
    content: str
    exit_code: int
    cwd: str | None = None
    running: bool = False
    """True when the command had not finished when this observation was made."""
    note: str | None = None
    """A sentence for the agent: why it returned early, that the shell was restarted, ..."""


class SetEnvObservation(_Model):
    """Which variables were set (names only)."""

    kind: Literal["set_env"] = "set_env"
    names: list[str]
    content: str = ""


class FileEditObservation(_Model):
    """The editor's answer; `diff` is a unified diff for commands that changed the file."""

    kind: Literal["edit"] = "edit"
    command: EditCommand
    path: str
    content: str
    diff: str | None = None


class IPythonObservation(_Model):
    """A cell's text output (errors included) and the image files it displayed."""

    kind: Literal["ipython"] = "ipython"
    code: str
    content: str
    images: list[str] = Field(default_factory=list)
    """Artifact names, fetched with the server's download endpoint."""
    error: bool = False
    note: str | None = None
    cwd: str = ""
    """The kernel's working directory after the cell ("" from servers that do not say)."""
    python: str = ""
    """The kernel's Python interpreter ("" from servers that do not say)."""


class BrowseTaskState(_Model):
    """Where an evaluation episode stands after a step: the step's reward, done, the task's
    message, and its goal (text, and image artifact names)."""

    task_id: str
    goal: str = ""
    goal_images: list[str] = Field(default_factory=list)
    reward: float = 0.0
    """This step's reward (0.0 for the page the episode starts on)."""
    done: bool = False
    """The task ended the episode: its score is final and further steps are refused."""
    message: str = ""
    """What the task said to the agent at this step, or why the episode ended."""
    best_reward: float = 0.0
    steps: int = 0


class BrowseObservation(_Model):
    """The page after a browser action: URL, text, accessibility tree, screenshot artifact."""

    kind: Literal["browse"] = "browse"
    action: str
    url: str = ""
    title: str = ""
    content: str = ""
    axtree: str = ""
    screenshot: str | None = None
    screenshot_path: str = ""
    """Where the screenshot file is on the sandbox's file system ("" when none was saved)."""
    downloads: list[str] = Field(default_factory=list)
    """Files this action downloaded, as absolute paths in the workspace."""
    error: str | None = None
    task: BrowseTaskState | None = None
    """Set during an evaluation episode (`browse_task_start`)."""


class BrowseTaskScoreObservation(_Model):
    """An evaluation episode's score: the best reward of its steps (0.0 before any step)."""

    kind: Literal["browse_task_score"] = "browse_task_score"
    task_id: str
    best_reward: float = 0.0
    rewards: list[float] = Field(default_factory=list)
    done: bool = False
    steps: int = 0
    content: str = ""


class CheckpointObservation(_Model):
    """A checkpoint taken (or a restore done): its commit and the files it changed."""

    kind: Literal["checkpoint"] = "checkpoint"
    commit: str
    added: list[str] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    deleted: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    """Files not covered (over the size limit)."""
    seconds: float = 0.0


class McpToolInfo(_Model):
    """One tool an MCP server offers: its name, description and JSON schema of arguments."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = Field(default_factory=dict)


class McpServerState(_Model):
    """One MCP server after `mcp_list`: its tools, or why it is not running."""

    name: str
    tools: list[McpToolInfo] = Field(default_factory=list)
    error: str = ""
    """Non-empty: the server did not start (or failed); the sentence says why."""
    notice: str = ""
    """Something to tell the person before it started (paths it cannot see, and the fix)."""
    seconds: float = 0.0
    """How long starting it and listing its tools took."""


class McpListObservation(_Model):
    """The MCP servers asked for, each with its tools or its failure."""

    kind: Literal["mcp_list"] = "mcp_list"
    servers: list[McpServerState] = Field(default_factory=list)
    content: str = ""


class McpCallObservation(_Model):
    """What an MCP tool answered: its text, the images it returned (artifact names)."""

    kind: Literal["mcp_call"] = "mcp_call"
    server: str
    tool: str
    content: str
    images: list[str] = Field(default_factory=list)
    error: bool = False
    """The tool reported an error (or the call failed)."""
    server_failed: str = ""
    """Non-empty: the server is gone (crashed, cut off); the sentence says what happened."""


ErrorKind = Literal[
    "bad_action",  # the action could not be carried out as asked (bad path, bad argument ...)
    "unavailable",  # the executor for this action is missing here (no Chromium, ...)
    "busy",  # another action is still running in that executor
    "internal",  # an executor failed; the message says how
    "sandbox",  # the sandbox itself could not be reached or restarted
]


class ErrorObservation(_Model):
    """The action was not carried out (or failed outright); `content` says why and what to do."""

    kind: Literal["error"] = "error"
    error_kind: ErrorKind = "bad_action"
    content: str


Observation = Annotated[
    CmdOutputObservation
    | SetEnvObservation
    | FileEditObservation
    | IPythonObservation
    | BrowseObservation
    | BrowseTaskScoreObservation
    | CheckpointObservation
    | McpListObservation
    | McpCallObservation
    | ErrorObservation,
    Field(discriminator="kind"),
]

# --------------------------------------------------------------------------- streaming


class OutputChunk(_Model):
    """A piece of output of the running shell command or Jupyter cell, as it arrives (for the
    live panes)."""

    kind: Literal["output"] = "output"
    seq: int
    command: str
    data: str
    source: Literal["bash", "jupyter"] = "bash"
    """Who printed it: the shell (ends with `CommandFinished`) or a Jupyter cell (its
    observation ends it)."""


class CommandFinished(_Model):
    """The running shell command finished (sent on the stream after its last chunk)."""

    kind: Literal["finished"] = "finished"
    seq: int
    command: str
    exit_code: int
    cwd: str | None = None


StreamEvent = Annotated[OutputChunk | CommandFinished, Field(discriminator="kind")]

# --------------------------------------------------------------------------- server info


class ServerInfo(_Model):
    """What `/health` answers: alive, versions, uptime and memory."""

    status: Literal["ok"] = "ok"
    protocol_version: int = PROTOCOL_VERSION
    workspace: str
    uptime_s: float
    rss_mb: float
    executors: dict[str, bool]
    """Executor name -> available here."""
    pid: int


class FileEntry(_Model):
    """One entry of a file listing."""

    path: str
    is_dir: bool
    size: int


_action_adapter: TypeAdapter[Action] = TypeAdapter(Action)
_observation_adapter: TypeAdapter[Observation] = TypeAdapter(Observation)
_stream_adapter: TypeAdapter[StreamEvent] = TypeAdapter(StreamEvent)


def parse_action(data: str | bytes | dict[str, object]) -> Action:
    """Validate JSON text or a dict as one of the action models."""
    if isinstance(data, dict):
        return _action_adapter.validate_python(data)
    return _action_adapter.validate_json(data)


def parse_observation(data: str | bytes | dict[str, object]) -> Observation:
    """Validate JSON text or a dict as one of the observation models."""
    if isinstance(data, dict):
        return _observation_adapter.validate_python(data)
    return _observation_adapter.validate_json(data)


def parse_stream_event(data: str | bytes | dict[str, object]) -> StreamEvent:
    """Validate JSON text or a dict as an output chunk or a finished marker."""
    if isinstance(data, dict):
        return _stream_adapter.validate_python(data)
    return _stream_adapter.validate_json(data)


ACTION_TYPES: tuple[type[BaseModel], ...] = (
    CmdRunAction,
    SetEnvAction,
    FileEditAction,
    IPythonAction,
    BrowseAction,
    BrowseTaskStartAction,
    BrowseTaskScoreAction,
    CheckpointAction,
    RestoreAction,
    McpListAction,
    McpCallAction,
)
