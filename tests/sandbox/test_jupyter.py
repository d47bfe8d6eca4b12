"""The Jupyter executor against a real IPython kernel (acceptance item 3 of issue 2)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from waiting import wait_until

from sandbox.executors.base import ExecutorContext, registrations
from sandbox.executors.jupyter import JupyterExecutor
from sandbox.protocol import CmdRunAction, ErrorObservation, IPythonAction, IPythonObservation

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A 1x1 PNG built in the kernel from zlib and struct, so no imaging library is needed.
PNG_CELL = """\
import struct, zlib
from IPython.display import Image, display

def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

png = (b"\\x89PNG\\r\\n\\x1a\\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
       + _chunk(b"IDAT", zlib.compress(b"\\x00\\xff\\x00\\x00")) + _chunk(b"IEND", b""))
display(Image(data=png))
"""


class ShellCwd:
    """Stands in for the shell's cwd: the test moves it by assigning `path`."""

    def __init__(self) -> None:
        self.path: str | None = None

    def __call__(self) -> str | None:
        return self.path


def make_executor(root: Path, shell_cwd: ShellCwd | None = None) -> JupyterExecutor:
    workspace = root / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    context = ExecutorContext(
        workspace=workspace,
        artifacts=root / "artifacts",
        env={"WB_TEST_MARK": "from-context"},
        shell_cwd=shell_cwd or ShellCwd(),
    )
    return JupyterExecutor.from_context(context)


def run(executor: JupyterExecutor, code: str, timeout: float | None = None) -> IPythonObservation:
    obs = executor.execute(IPythonAction(code=code, timeout=timeout))
    assert isinstance(obs, IPythonObservation), obs
    return obs


@pytest.fixture(scope="module")
def cwd_holder() -> ShellCwd:
    return ShellCwd()


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, cwd_holder: ShellCwd
) -> Iterator[JupyterExecutor]:
    """One kernel for the tests whose state does not disturb each other."""
    executor = make_executor(tmp_path_factory.mktemp("jupyter"), cwd_holder)
    yield executor
    executor.close()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(*pids: int) -> None:
    wait_until(lambda: all(gone(pid) for pid in pids), 30, f"processes {pids} to end")


def test_registered_with_availability() -> None:
    reg = registrations()["jupyter"]
    assert reg.action_kinds == ("ipython",)
    assert reg.available() is None


def test_module_import_does_not_load_jupyter_client() -> None:
    code = "import sys, sandbox.executors.jupyter; print('jupyter_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_state_persists_across_cells(shared: JupyterExecutor) -> None:
    assert run(shared, "counter = 41").content == ""
    obs = run(shared, "counter += 1\nprint('now', counter)\ncounter * 2")
    assert obs.content == "now 42\n84"
    assert not obs.error and obs.note is None


def test_kernel_runs_this_python_with_context_env(shared: JupyterExecutor) -> None:
    obs = run(shared, "import os, sys; print(os.environ['WB_TEST_MARK'], sys.executable)")
    assert obs.content == f"from-context {sys.executable}"


def test_exception_shows_traceback(shared: JupyterExecutor) -> None:
    obs = run(shared, "def explode():\n    raise ValueError('boom here')\nexplode()")
    assert obs.error
    assert "ValueError" in obs.content and "boom here" in obs.content
    assert "explode()" in obs.content  # the traceback, not just the message
    assert "\x1b" not in obs.content
    assert not run(shared, "1 + 1").error


def test_stderr_and_result_in_order(shared: JupyterExecutor) -> None:
    obs = run(shared, "import sys\nprint('out')\nprint('err', file=sys.stderr)\n'result'")
    assert obs.content.splitlines() == ["out", "err", "'result'"]


def test_png_display_saved_as_artifact(shared: JupyterExecutor) -> None:
    obs = run(shared, PNG_CELL)
    assert not obs.error, obs.content
    assert len(obs.images) == 1
    name = obs.images[0]
    assert name in obs.content and name.endswith(".png")
    artifacts = shared._context.artifacts
    assert (artifacts / name).read_bytes().startswith(PNG_SIGNATURE)
    again = run(shared, "Image(data=png)")  # as a cell result this time: a new, unique file
    assert len(again.images) == 1 and again.images[0] != name
    assert (artifacts / again.images[0]).read_bytes().startswith(PNG_SIGNATURE)


def test_cwd_follows_shell(shared: JupyterExecutor, cwd_holder: ShellCwd, tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    cwd_holder.path = str(first)
    assert run(shared, "import os; os.getcwd()").content == repr(str(first))
    cwd_holder.path = str(second)
    assert run(shared, "os.getcwd()").content == repr(str(second))
    cwd_holder.path = str(tmp_path / "missing")  # a shell cwd that vanished is not followed
    assert run(shared, "os.getcwd()").content == repr(str(second))
    cwd_holder.path = None


def test_timeout_interrupts_and_keeps_state(shared: JupyterExecutor) -> None:
    run(shared, "kept = 'yes'")
    start = time.monotonic()
    obs = run(shared, "import time\nprint('before', flush=True)\ntime.sleep(30)", timeout=1)
    assert time.monotonic() - start < 8
    assert "before" in obs.content
    assert obs.note is not None and "interrupted" in obs.note
    assert "interrupted" in obs.content
    assert run(shared, "kept").content == "'yes'"


def test_pip_magic_uses_kernel_python(shared: JupyterExecutor) -> None:
    obs = run(shared, "%pip show pexpect", timeout=60)
    assert "Name: pexpect" in obs.content, obs.content
    assert not obs.error


def test_long_output_keeps_head_and_tail(shared: JupyterExecutor) -> None:
    obs = run(shared, "print('FIRST'); print('x' * 200_000); print('LAST')")
    assert obs.content.startswith("FIRST") and obs.content.endswith("LAST")
    assert "truncated" in obs.content
    assert len(obs.content) < 40_000


def test_help_page_is_returned(shared: JupyterExecutor) -> None:
    assert "Return the number of items" in run(shared, "len?").content


def test_bad_actions_get_clear_errors(shared: JupyterExecutor) -> None:
    obs = shared.execute(IPythonAction(code="1", timeout=0))
    assert isinstance(obs, ErrorObservation) and "timeout" in obs.content
    obs = shared.execute(CmdRunAction(command="ls"))
    assert isinstance(obs, ErrorObservation) and "run" in obs.content


def test_skills_are_importable_in_kernel(shared: JupyterExecutor) -> None:
    import sandbox.skills as skills

    names = [n for n in getattr(skills, "__all__", dir(skills)) if not n.startswith("_")]
    assert names, "sandbox.skills exports nothing"
    obs = run(shared, f"print(all(n in globals() for n in {names!r}))")
    assert obs.content == "True", obs.content


def test_killed_kernel_is_restarted_with_note(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    try:
        run(executor, "lost = 1")
        old_pid = executor.kernel_pid
        assert old_pid is not None
        os.kill(old_pid, signal.SIGKILL)
        wait_gone(old_pid)
        obs = run(executor, "1 + 1")
        assert obs.content.endswith("2")
        assert obs.note is not None and "restarted" in obs.note and "lost" in obs.note
        assert "restarted" in obs.content
        assert executor.kernel_pid not in (None, old_pid)
        obs = run(executor, "lost")
        assert obs.error and "NameError" in obs.content and obs.note is None
    finally:
        executor.close()


def test_kernel_dying_in_a_cell_is_restarted(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    try:
        # The pause lets the kernel's I/O thread send the print before the process vanishes.
        cell = "import os, time\nprint('going', flush=True)\ntime.sleep(1)\nos._exit(3)"
        obs = run(executor, cell)
        assert "going" in obs.content and obs.error
        assert obs.note is not None and "died" in obs.note and "restarted" in obs.note
        assert run(executor, "'alive'").content == "'alive'"
    finally:
        executor.close()


def test_close_leaves_no_process(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    obs = run(executor, "import subprocess; child = subprocess.Popen(['sleep', '60']); child.pid")
    child_pid = int(obs.content)
    kernel_pid = executor.kernel_pid
    assert kernel_pid is not None and not gone(child_pid)
    executor.close()
    wait_gone(kernel_pid, child_pid)
    obs2 = executor.execute(IPythonAction(code="1"))
    assert isinstance(obs2, ErrorObservation) and "closed" in obs2.content


def test_close_while_kernel_starts(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    executor.close()  # right away: the starting kernel must not survive
    workspace = str(tmp_path / "workspace")
    left = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.cwd() == workspace and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.Error:
            continue
    assert left == []


def test_close_during_a_cell_returns_promptly(tmp_path: Path) -> None:
    executor = make_executor(tmp_path)
    assert run(executor, "'warm'").content == "'warm'"
    kernel_pid = executor.kernel_pid
    assert kernel_pid is not None
    answers: list[object] = []
    started = tmp_path / "cell-started"
    code = f"import pathlib, time; pathlib.Path({str(started)!r}).touch(); time.sleep(60)"
    cell = threading.Thread(
        target=lambda: answers.append(executor.execute(IPythonAction(code=code)))
    )
    cell.start()

    def cell_started() -> bool:
        if started.exists():
            return True
        assert cell.is_alive(), f"the cell ended before it started: {answers}"
        return False

    wait_until(cell_started, 30, "the cell to start")  # close() must come while the cell runs
    executor.close()
    cell.join(5)
    assert not cell.is_alive() and len(answers) == 1
    answer = answers[0]
    assert isinstance(answer, IPythonObservation) and answer.error, answer
    assert "sandbox closed while this cell ran" in (answer.note or ""), answer
    wait_gone(kernel_pid)


SERVER_STAND_IN = """\
import sys, time
from pathlib import Path
from sandbox.executors.base import ExecutorContext
from sandbox.executors.jupyter import JupyterExecutor
from sandbox.protocol import IPythonAction
root = Path(sys.argv[1])
executor = JupyterExecutor(ExecutorContext(workspace=root, artifacts=root / "artifacts"))
cell = "import subprocess; subprocess.Popen(['sleep', '60']).pid"
child = executor.execute(IPythonAction(code=cell)).content
print(executor.kernel_pid, child, flush=True)
time.sleep(60)
"""


def test_server_death_takes_kernel_and_its_children(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER_STAND_IN, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        kernel_pid, child_pid = (int(word) for word in server.stdout.readline().split())
        connection_dir = Path(psutil.Process(kernel_pid).cmdline()[-2]).parent
        assert connection_dir.is_dir()
        server.kill()
        wait_gone(kernel_pid, child_pid)
        assert not connection_dir.exists()
    finally:
        server.kill()
        server.wait()


def test_kernel_that_cannot_start_is_reported(tmp_path: Path) -> None:
    context = ExecutorContext(workspace=tmp_path / "missing", artifacts=tmp_path / "artifacts")
    executor = JupyterExecutor.from_context(context)
    try:
        obs = executor.execute(IPythonAction(code="1"))
        assert isinstance(obs, ErrorObservation)
        assert "did not start" in obs.content and "missing" in obs.content
    finally:
        executor.close()


def test_cwd_follows_cd_through_sandbox(tmp_path: Path) -> None:
    from sandbox.core import Sandbox

    (tmp_path / "sub").mkdir()
    sandbox = Sandbox(tmp_path, artifacts=tmp_path / "artifacts")
    try:
        sandbox.execute(CmdRunAction(command=f"cd {tmp_path / 'sub'}"))
        obs = sandbox.execute(IPythonAction(code="import os; os.getcwd()"))
        assert isinstance(obs, IPythonObservation)
        assert obs.content == repr(str(tmp_path.resolve() / "sub"))
    finally:
        sandbox.close()


def test_every_cell_reports_the_kernel_cwd_and_python(tmp_path: Path) -> None:
    from sandbox.core import Sandbox

    root = tmp_path.resolve()
    for name in ("sub", "elsewhere", "after_error", "doomed"):
        (root / name).mkdir()
    sandbox = Sandbox(root, artifacts=root / "artifacts")

    def cell(code: str) -> IPythonObservation:
        obs = sandbox.execute(IPythonAction(code=code))
        assert isinstance(obs, IPythonObservation), obs
        return obs

    try:
        first = cell("1")
        assert (first.cwd, first.python) == (str(root), sys.executable)
        sandbox.execute(CmdRunAction(command="cd sub"))
        assert cell("2").cwd == str(root / "sub")
        moved = cell(f"import os; os.chdir({str(root / 'elsewhere')!r})")
        assert moved.cwd == str(root / "elsewhere") and not moved.error
        failed = cell(f"os.chdir({str(root / 'after_error')!r}); 1 / 0")
        assert failed.error and failed.cwd == str(root / "after_error")
        assert failed.python == sys.executable
        removed = cell(f"os.chdir({str(root / 'doomed')!r}); os.rmdir(os.getcwd())")
        assert removed.cwd == "" and not removed.error  # no cwd to name
        sandbox.execute(CmdRunAction(command=f"cd {root}"))
        assert cell("3").cwd == str(root)
    finally:
        sandbox.close()


def test_one_picture_in_several_formats_is_one_image(shared: JupyterExecutor) -> None:
    """PIL's display sends a PNG and a JPEG of the same picture: two images were drawn."""
    run(shared, PNG_CELL)
    obs = run(
        shared,
        "from IPython.display import publish_display_data\n"
        "import base64\n"
        "b = base64.b64encode(png).decode()\n"
        "publish_display_data({'image/png': b, 'image/jpeg': b, 'text/plain': 'a picture'})",
    )
    assert not obs.error, obs.content
    assert len(obs.images) == 1 and obs.images[0].endswith(".png")
