"""The agent's shell gets default signal dispositions whatever its parent ignored.

Python ignores SIGPIPE and SIGXFSZ, and a sandbox started from a script's background job
(`workbench --headless ... &`, `nohup`) ignores SIGINT and SIGQUIT too: a shell that inherits
that cannot stop a command on C-c and prints "Broken pipe" where a terminal prints nothing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import json, signal, sys, threading
from pathlib import Path
from sandbox.executors.bash import BashExecutor
from sandbox.protocol import CmdRunAction

signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a job started with `&` from a script has it
signal.signal(signal.SIGQUIT, signal.SIG_IGN)
found = {}

def work():  # the server runs executors on worker threads, not the main one
    shell = BashExecutor(Path(sys.argv[1]))
    try:
        run = lambda command, **kw: shell.execute(CmdRunAction(command=command, **kw))
        found["pipe"] = run('yes | head -1; echo "status ${PIPESTATUS[*]}"').content
        found["ignored"] = run("grep -E '^Sig(Ign|Blk)' /proc/self/status").content
        assert run("sleep 30", soft_timeout=0.5).running
        stopped = run("C-c", is_input=True, timeout=60)
        found["interrupted"] = [stopped.exit_code, stopped.running]
    finally:
        shell.close()

thread = threading.Thread(target=work)
thread.start()
thread.join()
print(json.dumps(found))
"""


def test_a_shell_started_with_signals_ignored_still_stops_on_ctrl_c_and_dies_on_sigpipe(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["interrupted"] == [130, False]  # C-c reached `sleep`
    assert found["pipe"] == "y\nstatus 141 0\n"  # `yes` died of SIGPIPE, silently
    assert found["ignored"] == "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
