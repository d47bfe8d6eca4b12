"""The agent's writable Python env (issue 22, item 1) on the local runtime under the default
isolation (bubblewrap): `%pip install` in the kernel, `import` in the kernel and in the shell's
`python`, the same env after a kernel restart and in a new session on the same workspace, a
matplotlib plot, and a read-only error that names the fix. Real bwrap, bash and kernel."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from agent_env_support import (
    PACKAGE,
    cell,
    install_and_import,
    plot_shows_an_image,
    shell,
    still_there,
    tiny_wheel,
)

from sandbox import agent_env
from sandbox.runtimes.bwrap import bwrap_available
from sandbox.runtimes.local import LocalRuntime

pytestmark = pytest.mark.skipif(bwrap_available() is not None, reason="needs bubblewrap")


async def test_pip_in_the_kernel_is_seen_by_the_shell_and_kept_for_the_workspace(
    tmp_path: Path,
) -> None:
    workspace, env = tmp_path / "ws", tmp_path / "env"
    workspace.mkdir()
    tiny_wheel(workspace / "wheels")
    runtime = LocalRuntime(workspace, python_env=env)  # isolation "auto": bubblewrap here
    await runtime.start()
    try:
        assert runtime.isolation == "bwrap"
        found = await shell(runtime, "command -v python python3 pip pip3")
        names = ("python", "python3", "pip", "pip3")
        assert found.content.split() == [f"/run/agent-env/bin/{n}" for n in names], found.content
        await install_and_import(runtime, "wheels")
        # The kernel dies and is started again: the package is still there.
        died = await cell(runtime, "import os; os._exit(1)")
        assert "restarted" in (died.note or "") + died.content, died
        await still_there(runtime)
        await plot_shows_an_image(runtime)
        # The system stays read-only, and the refusal names the way to install.
        refused = await shell(runtime, "touch /usr/lib/wb-test")
        assert refused.exit_code != 0 and "pip install" in (refused.note or ""), refused
        assert "/run/agent-env" in (refused.note or "")
        in_kernel = await cell(runtime, "open('/usr/lib/wb-test', 'w')")
        assert in_kernel.error and "pip install" in (in_kernel.note or ""), in_kernel
    finally:
        await runtime.close()
    # On the host the files are the person's (this process's uid), not the agent's.
    installed = agent_env.site_packages(env) / PACKAGE / "__init__.py"
    assert installed.stat().st_uid == os.getuid()
    # A new session on the same workspace finds what was installed.
    again = LocalRuntime(workspace, python_env=env)
    await again.start()
    try:
        await still_there(again)
    finally:
        await again.close()


def test_prepare_is_quick_keeps_installs_and_never_follows_a_planted_link(tmp_path: Path) -> None:
    env, elsewhere = tmp_path / "env", tmp_path / "elsewhere"
    env.mkdir()
    elsewhere.mkdir()
    first = agent_env.prepare(env)
    again = agent_env.prepare(env)
    assert again < 0.05 and first < 0.5, (first, again)
    (agent_env.site_packages(env) / "kept.py").write_text("x = 1\n")
    # The agent replaced bin by a link to a folder it may not write, and spoiled the marker.
    (env / "bin").rename(tmp_path / "old-bin")
    (env / "bin").symlink_to(elsewhere)
    (env / ".workbench-env.json").write_text("{}")
    agent_env.prepare(env)
    assert not (env / "bin").is_symlink() and list(elsewhere.iterdir()) == []
    assert os.readlink(env / "bin" / "python3") == "python"
    assert (agent_env.site_packages(env) / "kept.py").exists()
