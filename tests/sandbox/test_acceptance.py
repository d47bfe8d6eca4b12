"""The sandbox's acceptance scenarios (shell, editor, Jupyter) through a whole runtime.

Every test runs twice: against the local runtime and against the Docker runtime, so the
contract the agent relies on is the same wherever the sandbox lives. The executor-level tests
(`test_bash.py`, `test_files.py`, `test_jupyter.py`) cover the details; these go through the
server, the client and the runtime as the controller does.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from docker_support import BASE_IMAGE, sandbox_image
from waiting import until

from sandbox.protocol import (
    CmdOutputObservation,
    CmdRunAction,
    ErrorObservation,
    FileEditAction,
    FileEditObservation,
    IPythonAction,
    IPythonObservation,
    Observation,
)
from sandbox.runtimes.base import ServerRuntime

__all__ = ["sandbox_image"]  # a fixture, used by name


@dataclass
class Box:
    """A started runtime and its workspace as the sandbox sees it (and as the host sees it)."""

    runtime: ServerRuntime
    inside: str
    host: Path

    async def run(self, command: str, **fields: Any) -> Observation:
        return await self.runtime.execute(CmdRunAction(command=command, **fields))

    async def sh(self, command: str, **fields: Any) -> CmdOutputObservation:
        obs = await self.run(command, **fields)
        assert isinstance(obs, CmdOutputObservation), obs
        return obs

    async def edit(self, command: str, name: str, **fields: Any) -> Observation:
        path = name if name.startswith("/") else f"{self.inside}/{name}"
        return await self.runtime.execute(FileEditAction(command=command, path=path, **fields))

    async def refused(self, command: str, name: str, **fields: Any) -> str:
        obs = await self.edit(command, name, **fields)
        assert isinstance(obs, ErrorObservation), obs
        return obs.content

    async def py(self, code: str) -> IPythonObservation:
        obs = await self.runtime.execute(IPythonAction(code=code))
        assert isinstance(obs, IPythonObservation), obs
        return obs


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
async def box(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Box]:
    """A fresh sandbox of each runtime kind, closed after the test."""
    host = tmp_path / "ws"
    host.mkdir()
    runtime: ServerRuntime
    if request.param == "local":
        from sandbox.runtimes.local import LocalRuntime

        runtime, inside = LocalRuntime(host, disable=["browser"]), str(host.resolve())
    else:
        request.getfixturevalue("sandbox_image")
        from sandbox.runtimes.docker import DockerRuntime

        runtime = DockerRuntime(
            workspace=host, base_image=BASE_IMAGE, memory="1g", disable=["browser"]
        )
        inside = "/workspace"
    await runtime.start()
    try:
        yield Box(runtime, inside, host)
    finally:
        await runtime.close()


# ------------------------------------------------------------------ the shell


async def test_cd_and_export_persist_and_chains_run(box: Box) -> None:
    await box.sh(f"mkdir -p {box.inside}/sub && cd {box.inside}/sub")
    await box.sh("export WB_X=42")
    obs = await box.sh('pwd; echo "x=$WB_X"')
    assert f"{box.inside}/sub" in obs.content and "x=42" in obs.content
    assert obs.cwd == f"{box.inside}/sub" and obs.exit_code == 0
    obs = await box.sh("echo a && echo b")
    assert obs.content.split() == ["a", "b"]


async def test_two_commands_on_two_lines_are_refused_and_listed(box: Box) -> None:
    obs = await box.run(f"touch {box.inside}/one\ntouch {box.inside}/two")
    assert isinstance(obs, ErrorObservation)
    assert "2 separate commands" in obs.content
    assert f"1. `touch {box.inside}/one`" in obs.content
    assert f"2. `touch {box.inside}/two`" in obs.content
    assert not (box.host / "one").exists() and not (box.host / "two").exists()


async def test_heredoc_loop_and_find_exec_are_one_command_each(box: Box) -> None:
    obs = await box.sh(f"cat > {box.inside}/notes.txt <<'EOF'\nfirst y\nsecond\nEOF")
    assert obs.exit_code == 0
    assert (box.host / "notes.txt").read_text() == "first y\nsecond\n"
    obs = await box.sh("for i in 1 2 3\ndo\n  echo n$i\ndone")
    assert obs.content.split() == ["n1", "n2", "n3"]
    (box.host / "deep").mkdir()
    (box.host / "deep" / "x").write_text("has y\n")
    obs = await box.sh(f"cd {box.inside} && find . -name x -exec grep -l y {{}} \\;")
    assert obs.content.strip() == "./deep/x" and obs.exit_code == 0


async def test_a_prompt_waits_for_input_and_new_commands_are_not_run(box: Box) -> None:
    obs = await box.sh('read -p "Name: " n && echo "Hi $n"', soft_timeout=1)
    assert obs.exit_code == -1 and "Name:" in obs.content
    busy = await box.run(f"touch {box.inside}/sneaky")
    assert isinstance(busy, ErrorObservation)
    assert "Not executed" in busy.content and "still running" in busy.content
    assert not (box.host / "sneaky").exists()
    obs = await box.sh("Ann", is_input=True)
    assert "Hi Ann" in obs.content and obs.exit_code == 0


async def test_soft_timeout_then_ctrl_c_then_the_shell_works(box: Box) -> None:
    obs = await box.sh("sleep 60", soft_timeout=1)
    assert obs.exit_code == -1 and obs.running
    obs = await box.sh("C-c", is_input=True)
    assert obs.exit_code == 130
    obs = await box.sh("echo ok")
    assert obs.content.strip() == "ok" and obs.exit_code == 0


async def test_hard_timeout_returns_output_so_far_and_the_rest_follows(box: Box) -> None:
    obs = await box.sh("for i in 1 2 3 4 5; do echo tick$i; sleep 1; done", timeout=2)
    assert obs.exit_code == -1 and "tick1" in obs.content and "tick5" not in obs.content
    seen = obs.content
    for _ in range(20):
        obs = await box.sh("", soft_timeout=2)
        seen += obs.content
        if obs.exit_code != -1:
            break
    assert obs.exit_code == 0
    assert re.findall(r"tick\d", seen) == [f"tick{i}" for i in range(1, 6)]


async def test_huge_output_keeps_head_and_tail(box: Box) -> None:
    obs = await box.sh("seq 1 50000")
    lines = obs.content.splitlines()
    assert lines[0] == "1" and lines[-1] == "50000"
    assert "output truncated" in obs.content and len(obs.content) < 100_000


async def test_empty_command_with_nothing_running_is_an_error(box: Box) -> None:
    obs = await box.run("")
    assert isinstance(obs, ErrorObservation) and "No command is running" in obs.content


# ------------------------------------------------------------------ the editor


async def test_editor_view_create_replace_insert_undo(box: Box) -> None:
    created = await box.edit("create", "f.py", file_text="def f():\n\treturn 1\n")
    assert isinstance(created, FileEditObservation)
    assert "already exists" in await box.refused("create", "f.py", file_text="x")
    view = await box.edit("view", "f.py", view_range=[2, 2])
    assert isinstance(view, FileEditObservation) and view.content.endswith("     2\t\treturn 1")
    await box.edit("str_replace", "f.py", old_str="return 1", new_str="return 2")
    await box.edit("insert", "f.py", insert_line=0, new_str="# top")
    assert (box.host / "f.py").read_text() == "# top\ndef f():\n\treturn 2\n"
    await box.edit("undo_edit", "f.py")
    await box.edit("undo_edit", "f.py")
    assert (box.host / "f.py").read_text() == "def f():\n\treturn 1\n"
    (box.host / "sub").mkdir()
    (box.host / ".hidden").write_text("x")
    listing = await box.edit("view", box.inside)
    assert isinstance(listing, FileEditObservation)
    assert "f.py" in listing.content and "1 hidden" in listing.content


async def test_editor_errors_say_what_to_do(box: Box) -> None:
    (box.host / "dup.txt").write_text("a\nb\na\n")
    assert "does not exist" in await box.refused("view", "missing.txt")
    relative = await box.runtime.execute(FileEditAction(command="view", path="dup.txt"))
    assert isinstance(relative, ErrorObservation) and "not an absolute path" in relative.content
    message = await box.refused("str_replace", "dup.txt", old_str="a", new_str="c")
    assert "2 times" in message and "[1, 3]" in message
    assert "did not appear verbatim" in await box.refused(
        "str_replace", "dup.txt", old_str="zzz", new_str="c"
    )
    assert "Invalid insert_line 9" in await box.refused(
        "insert", "dup.txt", insert_line=9, new_str="x"
    )
    assert "No edit history" in await box.refused("undo_edit", "dup.txt")
    await box.sh(f"printf '\\x7fELF\\x00\\x01\\x02' > {box.inside}/prog")
    assert "binary" in await box.refused("view", "prog")
    await box.sh(f"head -c 11000000 /dev/zero | tr '\\0' a > {box.inside}/big.txt")
    assert "over the editor's limit" in await box.refused("view", "big.txt")


# ------------------------------------------------------------------ Jupyter


async def test_jupyter_state_tracebacks_images_and_cwd(box: Box) -> None:
    await box.py("x = 21")
    assert (await box.py("print(x * 2)")).content.strip() == "42"
    failed = await box.py("1 / 0")
    assert failed.error and "ZeroDivisionError" in failed.content
    png = await box.py(
        "import base64\nfrom IPython.display import Image, display\n"
        "display(Image(data=base64.b64decode("
        "'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==')))"
    )
    assert png.images and png.images[0].endswith(".png")
    assert (await box.runtime.download(png.images[0])).startswith(b"\x89PNG")
    await box.sh(f"mkdir -p {box.inside}/nb && cd {box.inside}/nb")
    assert (await box.py("import os; print(os.getcwd())")).content.strip() == f"{box.inside}/nb"


async def test_a_kernel_killed_from_outside_is_restarted_with_a_note(box: Box) -> None:
    await box.py("kept = 1")
    # With isolation the shell cannot see the kernel (its own pid namespace), so a `kill` from
    # the shell would not reach it: a helper the kernel starts kills it when the test says go.
    killer = (
        "while [ ! -e go ]; do sleep 0.02; done; kill -9 %(pid)d; "
        # gone once it is a zombie or reaped: a cell sent before that would find it dying
        "while grep -qs '^State:.*[^Z] (' /proc/%(pid)d/status; do sleep 0.01; done; touch gone"
    )
    start = f"['sh', '-c', {killer!r} % {{'pid': os.getpid()}}]"
    await box.py(f"import os, subprocess\nsubprocess.Popen({start}, cwd={box.inside!r})")
    (box.host / "go").touch()
    await until(lambda: (box.host / "gone").exists(), what="the kernel killed between cells")
    obs = await box.py("print('back')")
    assert obs.note is not None and "restarted" in obs.note
    if "back" not in obs.content:  # the server had not yet seen the death: the cell found it
        assert "died" in obs.note, obs
        obs = await box.py("print('back')")
    assert "back" in obs.content, obs
    lost = await box.py("kept")
    assert lost.error and "NameError" in lost.content
