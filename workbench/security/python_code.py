"""Judging Python code (an IPython cell, `python -c`) from its syntax tree.

Calls are resolved through imports and aliases (`import os as o; o.system`, `from shutil import
rmtree as r`, `__import__("os")`, `getattr(os, "system")`); commands given as literals go back
to the `Judge` as shell, code given to `exec`/`eval` as literals as Python. IPython's `!` lines
and `%%bash` cells are shell; `%pip install` is a package install.
"""

from __future__ import annotations

import ast
import posixpath
import re

from workbench.security import paths
from workbench.security.risk import Findings, Judge

_RUNS_SHELL = frozenset(
    {
        "os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput",
        "commands.getoutput", "pty.spawn", "asyncio.create_subprocess_shell",
    }
)  # fmt: skip
_RUNS_ARGV = frozenset(
    {
        "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
        "subprocess.Popen", "asyncio.create_subprocess_exec", "os.execv", "os.execvp",
        "os.execvpe", "os.execve", "os.execl", "os.execlp", "os.execle", "os.execlpe",
        "os.spawnv", "os.spawnvp", "os.spawnl", "os.spawnlp", "os.posix_spawn", "os.posix_spawnp",
    }
)  # fmt: skip
_DELETES = frozenset(
    {"os.remove", "os.unlink", "os.rmdir", "os.removedirs", "pathlib.Path.unlink",
     "pathlib.Path.rmdir"}
)  # fmt: skip
_RECURSIVE = frozenset({"shutil.rmtree"})
_MOVES = frozenset({"shutil.move", "os.rename", "os.replace", "os.renames"})
_COPIES = frozenset(
    {"shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "os.symlink",
     "os.link"}
)  # fmt: skip
_ARCHIVES = frozenset({"shutil.unpack_archive"})
_PATH_METHODS = frozenset(
    {"write_text", "write_bytes", "touch", "mkdir", "unlink", "rmdir", "rename", "replace",
     "symlink_to", "hardlink_to"}
)  # fmt: skip
_MAKES_DIRS = frozenset({"os.makedirs", "os.mkdir"})
_CHANGES = frozenset({"os.chmod", "os.chown", "os.lchown", "shutil.chown", "os.truncate"})
_SIGNALS = frozenset({"os.kill", "os.killpg", "signal.pthread_kill"})
_SENDS = {
    "urllib.request.urlopen": 1, "urllib.request.Request": 1, "urllib2.urlopen": 1,
    "requests.post": 1, "requests.put": 1, "requests.patch": 1, "requests.request": 2,
    "httpx.post": 1, "httpx.put": 1, "httpx.patch": 1, "httpx.request": 2,
}  # fmt: skip
"""Calls that send a body to the network, with the position of their data argument."""
_BODY_KEYWORDS = ("data", "json", "files", "content")
_CODE = frozenset({"exec", "eval", "compile", "builtins.exec", "builtins.eval"})
_IMPORTERS = frozenset({"__import__", "importlib.import_module"})
_WRITE_MODE = re.compile(r"[wax+]")
_SHELL_MAGIC = re.compile(r"^\s*%%(bash|sh|script|system|sx)\b")
_LINE_SHELL = re.compile(r"^(\s*)(?:[\w.]+\s*=\s*)?(!!?|%sx\b|%system\b)(.*)$")
_INSTALL_MAGIC = re.compile(r"^\s*%(pip|conda|mamba)\s+install\b")


def judge_python(code: str, workspace: str, judge: Judge, findings: Findings, depth: int) -> None:
    """Judge Python code, IPython syntax included."""
    if _SHELL_MAGIC.match(code):
        judge.shell(code.split("\n", 1)[1] if "\n" in code else "", findings, depth + 1)
        return
    lines: list[str] = []
    for line in code.splitlines():
        shell = _LINE_SHELL.match(line)
        if shell:
            judge.shell(shell.group(3), findings, depth + 1)
            lines.append(f"{shell.group(1)}pass")
        elif _INSTALL_MAGIC.match(line):
            findings.add("MEDIUM", "installs packages (%pip install)", "install")
            lines.append(re.sub(r"%.*", "pass", line))
        elif line.lstrip().startswith("%"):
            lines.append(re.sub(r"%.*", "pass", line))
        else:
            lines.append(line)
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        _unparsable(code, findings)
        return
    try:
        _Visitor(workspace, judge, findings, depth).visit(tree)
    except RecursionError:
        findings.add("HIGH", "the code is nested too deeply to read")


_RISKY_NAMES = re.compile(
    r"\b(os\.(system|popen|remove|unlink|rmdir|exec|spawn|kill)|subprocess|rmtree|__import__"
    r"|exec\s*\(|eval\s*\(|ctypes|pty\.)"
)


def _unparsable(code: str, findings: Findings) -> None:
    """Code that is not Python: HIGH only when it names something that deletes or runs."""
    found = _RISKY_NAMES.search(code)
    if found:
        findings.add("HIGH", f"the code does not parse, and uses {found.group(0).strip('( ')}")


class _Visitor(ast.NodeVisitor):
    def __init__(self, workspace: str, judge: Judge, findings: Findings, depth: int) -> None:
        self.workspace = workspace
        self.judge = judge
        self.findings = findings
        self.depth = depth
        self.aliases: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name.split(".")[0]] = (
                alias.name if alias.asname else alias.name.split(".")[0]
            )

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{node.module or ''}.{alias.name}"

    def visit_Assign(self, node: ast.Assign) -> None:
        value = self.dotted(node.value)
        if value is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.aliases[target.id] = value
        self.generic_visit(node)

    def dotted(self, node: ast.expr) -> str | None:
        """The full dotted name `node` refers to (`o.system` -> `os.system`), if known."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id, node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base is not None else None
        if isinstance(node, ast.Call):
            called = self.dotted(node.func)
            literal = _string(node.args[1] if len(node.args) > 1 else None)
            if called in _IMPORTERS:
                return _string(node.args[0] if node.args else None)
            if called in ("getattr", "builtins.getattr") and literal is not None:
                base = self.dotted(node.args[0])
                return f"{base}.{literal}" if base is not None else None
            if called in ("pathlib.Path", "pathlib.PurePath", "Path"):
                return "pathlib.Path"
            if called == "open" or called == "builtins.open":
                return "file"
        return None

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) < 4096:
            text = node.value
            full = paths.resolve(text, self.workspace)
            if (full is not None and paths.credential(full)) or re.search(
                r"/proc/[^/\s]+/(environ|mem)\b|\.ssh/id_|\.aws/credentials", text
            ):
                self.findings.add("HIGH", f"reads credentials ({text[:80]})", "credentials")

    def visit_Call(self, node: ast.Call) -> None:
        name = self.dotted(node.func) or ""
        method = name.rsplit(".", 1)[-1]
        attr = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        on_path = isinstance(node.func, ast.Attribute) and _string(node.func.value) is not None
        if not name and attr in _PATH_METHODS and on_path:  # (Path('.git') / 'x').write_text
            name, method = f"pathlib.Path.{attr}", attr
        first = node.args[0] if node.args else None
        if name in _RUNS_SHELL or (name in _RUNS_ARGV and _keyword(node, "shell")):
            self.shell(first, name)
        elif name in _RUNS_ARGV:
            self.argv(first, name)
        elif name in _CODE:
            self.code(first, name)
        elif name in _RECURSIVE:
            self.findings.add("HIGH", "recursive forced delete (shutil.rmtree)", "delete")
            self.path(first, "deletes")
        elif name in _DELETES or (
            name.startswith("pathlib.Path.") and method in ("unlink", "rmdir")
        ):
            self.path(_target(node, first), "deletes", unknown_too=True)
        elif name in _MOVES:
            self.path(first, "moves away")
            self.path(node.args[1] if len(node.args) > 1 else None, "moves into")
        elif name in _COPIES:
            dest = node.args[1] if len(node.args) > 1 else None
            self.path(dest, "copies into", tree=name == "shutil.copytree")
            source, into = _string(first), _string(dest)
            if source is not None and into is not None:  # `dest` may be a folder
                self.path_text(posixpath.join(into, posixpath.basename(source)), "copies into")
        elif name in _ARCHIVES or attr in ("extractall", "extract"):
            self.archive_call(node, name, attr)
        elif name in _MAKES_DIRS or (name.startswith("pathlib.Path.") and method == "mkdir"):
            text = _string(_target(node, first))
            if text is not None:
                self.path_text(text, "creates", only_protected=True)
        elif name in _CHANGES:
            self.path(first, f"changes ({name})")
        elif name in _SENDS and (
            len(node.args) > _SENDS[name]
            or any(_keyword_value(node, k) is not None for k in _BODY_KEYWORDS)
        ):
            self.findings.add("HIGH", f"uploads data to the network ({name}): it may carry files")
        elif name in _SIGNALS:
            self.findings.add("HIGH", f"sends a signal to a process ({name})", "signal")
        elif name in ("open", "builtins.open", "io.open", "os.open"):
            self.open_call(node, first)
        elif name.startswith("pathlib.Path.") and method in ("write_text", "write_bytes", "touch"):
            self.path(_target(node, None), "writes")
        elif name.startswith("pathlib.Path.") and method in ("rename", "replace", "symlink_to"):
            self.path(_target(node, None), "moves away")
            self.path(first, "moves into")
        self.generic_visit(node)

    def shell(self, node: ast.expr | None, name: str) -> None:
        text = _string(node)
        if text is None:
            self.findings.add("HIGH", f"runs a shell command known only when it runs ({name})")
        else:
            self.judge.shell(text, self.findings, self.depth + 1)

    def argv(self, node: ast.expr | None, name: str) -> None:
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            words = [_string(e) for e in node.elts]
            if words[0] is None:
                self.findings.add("HIGH", f"runs a program known only when it runs ({name})")
                return
            import shlex

            line = " ".join(shlex.quote(w) if w is not None else "$UNKNOWN" for w in words)
            self.judge.shell(line, self.findings, self.depth + 1)
            return
        text = _string(node)
        if text is not None:
            self.judge.shell(text, self.findings, self.depth + 1)
        else:
            self.findings.add("HIGH", f"runs a program known only when it runs ({name})")

    def code(self, node: ast.expr | None, name: str) -> None:
        text = _string(node)
        if text is None:
            self.findings.add("HIGH", f"runs Python code known only when it runs ({name})")
        else:
            self.judge.python(text, self.findings, self.depth + 1)

    def path(
        self, node: ast.expr | None, verb: str, unknown_too: bool = False, tree: bool = False
    ) -> None:
        text = _string(node)
        if text is None:
            if unknown_too and node is not None:
                self.findings.add("HIGH", f"{verb} a path known only when it runs")
            return
        self.path_text(text, verb, tree)

    def path_text(
        self, text: str, verb: str, tree: bool = False, only_protected: bool = False
    ) -> None:
        """Judge a change to the path `text` (`tree`: to all the folder holds)."""
        full = paths.resolve(text, self.workspace)
        if full is None:
            return
        what = paths.protected(full, self.workspace)
        if what is not None:
            self.findings.add("HIGH", paths.protected_reason(verb, text, what), "protected")
        elif tree and paths.holds_protected(full, self.workspace):
            reason = paths.holds_protected_reason(verb, text, full, self.workspace)
            self.findings.add("HIGH", reason)
        elif only_protected:
            return
        elif paths.persistence(full):
            self.findings.add("HIGH", f"{verb} {text}, {paths.PERSISTS}", "persistence")
        elif not paths.inside(full, self.workspace):
            self.findings.add("HIGH", f"{verb} {text}, outside the workspace", "outside")

    def fills(self, folder: ast.expr | None, names: tuple[str, ...] | None, verb: str) -> None:
        """Judge writing `names` (None: not known before it runs) into `folder` (None: the
        current folder)."""
        text = _string(folder) if folder is not None else "."
        full = paths.resolve(text, self.workspace) if text is not None else None
        if text is None or full is None:
            return
        if names is None and paths.holds_protected(full, self.workspace):
            reason = paths.unknown_contents_reason(verb, text, full, self.workspace)
            self.findings.add("HIGH", reason)
        elif names is None:
            self.path_text(text, verb)
        for name in names or ():
            self.path_text(posixpath.join(text, name), verb, tree=True)

    def archive_call(self, node: ast.Call, name: str, attr: str) -> None:
        """`ZipFile(…).extractall(path)`, `.extract(member, path)`, `shutil.unpack_archive`."""
        args = node.args
        if name == "shutil.unpack_archive":
            where = args[1] if len(args) > 1 else _keyword_value(node, "extract_dir")
            self.fills(where, None, "unpacks into")
        elif attr == "extractall":
            self.fills(args[0] if args else _keyword_value(node, "path"), None, "extracts into")
        elif attr == "extract" and _string(args[0] if args else None) is not None:
            member = _string(args[0]) or ""
            where = args[1] if len(args) > 1 else _keyword_value(node, "path")
            self.fills(where, (member,), "extracts into")

    def open_call(self, node: ast.Call, first: ast.expr | None) -> None:
        mode = _string(node.args[1] if len(node.args) > 1 else _keyword_value(node, "mode"))
        if mode is not None and _WRITE_MODE.search(mode):
            self.path(first, "writes")
        elif mode is None and len(node.args) > 1:
            self.path(first, "may write")


def _string(node: ast.expr | None) -> str | None:
    """The value of a string literal (or a literal made of joined strings)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
        left, right = _string(node.left), _string(node.right)
        if left is None or right is None:
            return None
        return left + right if isinstance(node.op, ast.Add) else posixpath.join(left, right)
    if isinstance(node, ast.JoinedStr):
        parts = [_string(v) if not isinstance(v, ast.FormattedValue) else None for v in node.values]
        return "".join(p for p in parts if p is not None) if all(parts) else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if node.func.attr == "join" and isinstance(node.args[0], (ast.List, ast.Tuple)):
            sep = _string(node.func.value)
            items = [_string(e) for e in node.args[0].elts]
            if sep is not None and all(i is not None for i in items):
                return sep.join(i for i in items if i is not None)
        if node.func.attr in ("expanduser", "abspath", "normpath", "realpath"):
            return _string(node.args[0])
        owner = node.func.value
        path_join = node.func.attr == "join" and (
            (isinstance(owner, ast.Attribute) and owner.attr == "path")
            or (isinstance(owner, ast.Name) and owner.id == "posixpath")
        )
        if path_join or node.func.attr == "joinpath":
            # os.path.join('.git', 'config'), Path('.git').joinpath('hooks')
            parts = [_string(a) for a in node.args]
            base = _string(owner) if node.func.attr == "joinpath" else ""
            if base is not None and all(p is not None for p in parts):
                return posixpath.join(base, *(p for p in parts if p is not None))
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("Path", "str", "PurePath")
        and node.args
    ):
        return _string(node.args[0])
    return None


def _target(node: ast.Call, first: ast.expr | None) -> ast.expr | None:
    """The path a call acts on: `os.remove(P)`, or `Path(P).unlink()`."""
    if first is not None:
        return first
    func = node.func
    if isinstance(func, ast.Attribute) and _string(func.value) is not None:
        return func.value  # `Path(P)`, `Path(A) / B`, `Path(A).joinpath(B)`
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
        return func.value.args[0] if func.value.args else None
    return None


def _keyword(node: ast.Call, name: str) -> bool:
    value = _keyword_value(node, name)
    return isinstance(value, ast.Constant) and bool(value.value)


def _keyword_value(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)
