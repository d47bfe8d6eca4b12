"""The tools offered to the LLM, as OpenAI-style function schemas with our own descriptions."""

from __future__ import annotations

from typing import Any

EXECUTE_BASH = "execute_bash"
STR_REPLACE_EDITOR = "str_replace_editor"
EXECUTE_IPYTHON_CELL = "execute_ipython_cell"
BROWSER = "browser"
THINK = "think"
FINISH = "finish"

RISK_LEVELS = ("LOW", "MEDIUM", "HIGH")
EDITOR_COMMANDS = ("view", "create", "str_replace", "insert", "undo_edit")

_SECURITY_RISK: dict[str, Any] = {
    "type": "string",
    "enum": list(RISK_LEVELS),
    "description": (
        "How much harm this call could do if it went wrong. LOW: reads or changes only files "
        "in the workspace. MEDIUM: installs packages, talks to the network, or changes many "
        "files. HIGH: deletes data, touches files outside the workspace, needs root, or "
        "publishes something (git push, uploads)."
    ),
}


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


EXECUTE_BASH_TOOL = _function(
    EXECUTE_BASH,
    "Run one command in a persistent bash shell inside the sandbox. The shell keeps its state "
    "between calls: the current directory, exported variables and activated virtualenvs stay.\n"
    "* Send a single command per call. Join steps with `&&` or `;`, or use pipes, loops and "
    "heredocs; two commands on separate lines are refused.\n"
    "* A command that prints nothing new for a while comes back early with exit code -1 and is "
    "still running. Then you may: send an empty `command` to collect more output, send text or "
    'a key such as `C-c`, `C-d` or `C-z` with `is_input` set to "true", or wait. A new '
    "command is not run while another one is still going.\n"
    "* Long-running servers belong in the background: `python app.py > server.log 2>&1 &`.\n"
    "* Very long output keeps its beginning and its end; redirect to a file and read it in "
    "parts when you need all of it.\n"
    "* Prefer non-interactive flags (`-y`, `--no-pager`); pagers are disabled.",
    {
        "command": {
            "type": "string",
            "description": "The bash command to run; empty to read more output of a running "
            'command; with is_input="true", the text or key to send to it.',
        },
        "is_input": {
            "type": "string",
            "enum": ["true", "false"],
            "description": '"true" to send `command` to the process that is running now '
            'instead of starting a new command. Default "false".',
        },
        "timeout": {
            "type": "number",
            "description": "A hard limit in seconds. When it passes, the call returns with the "
            "output so far and exit code -1 (the command keeps running). Without it, the call "
            "returns once the command has been silent for a few seconds.",
        },
        "security_risk": _SECURITY_RISK,
    },
    ["command", "security_risk"],
)

STR_REPLACE_EDITOR_TOOL = _function(
    STR_REPLACE_EDITOR,
    "View, create and edit text files in the sandbox. Paths must be absolute.\n"
    "* `view`: a file with line numbers (optionally only `view_range`), or a directory two "
    "levels deep without hidden entries.\n"
    "* `create`: a new file with `file_text`; an existing file is never overwritten.\n"
    "* `str_replace`: replace `old_str` with `new_str`. `old_str` must match exactly one place "
    "in the file, whitespace included; include a few lines of context to make it unique.\n"
    "* `insert`: put `new_str` after line `insert_line` (0 inserts at the top).\n"
    "* `undo_edit`: take back the last change made to the file.\n"
    "Binary files and very large files are refused.",
    {
        "command": {
            "type": "string",
            "enum": list(EDITOR_COMMANDS),
            "description": "What to do.",
        },
        "path": {"type": "string", "description": "Absolute path of the file or directory."},
        "file_text": {"type": "string", "description": "Content of the new file (create)."},
        "old_str": {"type": "string", "description": "The exact text to replace (str_replace)."},
        "new_str": {
            "type": "string",
            "description": "The replacement (str_replace; empty deletes) or the text to insert.",
        },
        "insert_line": {
            "type": "integer",
            "description": "The line after which `new_str` goes (insert).",
        },
        "view_range": {
            "type": "array",
            "items": {"type": "integer"},
            "description": "[first, last] lines to show (view; 1-based, last -1 = to the end).",
        },
        "security_risk": _SECURITY_RISK,
    },
    ["command", "path"],
)

EXECUTE_IPYTHON_CELL_TOOL = _function(
    EXECUTE_IPYTHON_CELL,
    "Run Python code in a persistent IPython kernel: variables and imports stay between calls. "
    "Its working directory follows the shell's. Magics work (`%pip install pkg`); the agent "
    "skills listed in the system prompt are already imported. Images you display are saved.",
    {
        "code": {"type": "string", "description": "The Python code of the cell."},
        "security_risk": _SECURITY_RISK,
    },
    ["code"],
)

BROWSER_TOOL = _function(
    BROWSER,
    "Drive a web browser with BrowserGym action strings and get back the page's text, its "
    "accessibility tree (elements carry ids called bid) and a screenshot. Examples: "
    '`goto("http://127.0.0.1:8000")`, `click("12")`, `fill("7", "hello")`, '
    "`scroll(0, 400)`, `go_back()`. Downloads land in the workspace.",
    {
        "code": {"type": "string", "description": "One or more BrowserGym actions, one a line."},
        "security_risk": _SECURITY_RISK,
    },
    ["code"],
)

THINK_TOOL = _function(
    THINK,
    "Write down reasoning, a plan or a hypothesis. Nothing runs and nothing changes; use it "
    "when weighing options or after surprising output.",
    {"thought": {"type": "string", "description": "The thought."}},
    ["thought"],
)

FINISH_TOOL = _function(
    FINISH,
    "End the task. Call it once the work is done and checked, or when you cannot go further. "
    "Say what you did (or what blocked you) in `message`.",
    {
        "message": {"type": "string", "description": "A short account for the user."},
        "outcome": {
            "type": "string",
            "enum": ["success", "gave_up"],
            "description": '"success" when the task is done; "gave_up" when it is not and '
            'you cannot finish it. Default "success".',
        },
    },
    ["message"],
)


def tool_schemas(enable_jupyter: bool = True, enable_browser: bool = False) -> list[dict[str, Any]]:
    """The tools to offer, in a stable order (some families can be turned off in config)."""
    tools = [EXECUTE_BASH_TOOL, STR_REPLACE_EDITOR_TOOL]
    if enable_jupyter:
        tools.append(EXECUTE_IPYTHON_CELL_TOOL)
    if enable_browser:
        tools.append(BROWSER_TOOL)
    tools += [THINK_TOOL, FINISH_TOOL]
    return tools


def tool_names(tools: list[dict[str, Any]]) -> list[str]:
    """The function names in a list of schemas."""
    return [str(tool["function"]["name"]) for tool in tools]
