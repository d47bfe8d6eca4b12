"""Probe: after the agent swaps a folder of the workspace for a symlink onto a host folder (or a
file for a symlink onto a host file), the person's `workbench rewind` and `diff` on the host must
not write or print through it."""

from __future__ import annotations

from attack_support import Cli, Host, bash, check_survived, check_unchanged, session


def test_rewind_never_writes_through_a_symlink_the_agent_made(cli: Cli, host: Host) -> None:
    (host.decoy / "folder").mkdir()
    (host.ws / "keep.txt").write_text("k\n")
    victim = host.decoy / "victim.txt"
    steps = [
        bash("mkdir -p d && echo one > d/f.txt && echo one > top.txt"),
        bash("echo two > d/f.txt && echo two > top.txt"),
        bash(f"rm -rf d top.txt && ln -s {host.decoy}/folder d && ln -s {victim} top.txt"),
    ]
    run, _ = session(cli, host, steps, ("--on-confirm", "approve"))
    check_survived(host, run)
    before = host.snapshot()
    session_id = host.logs()[-1].stem
    for to in ("1", "2", "0"):
        done = cli.run(["rewind", session_id, "--to", to, "--yes"], host.env(), host.root)
        assert not done.timed_out and done.code is not None, done.text
        assert (host.decoy / "victim.txt").read_text() == "decoy\n", f"--to {to}: {done.text}"
        assert not any((host.decoy / "folder").iterdir()), f"--to {to}: {done.text}"
        if to != "0":  # the rewind did restore the folder (before step 1 there was none)
            restored = host.ws / "d" / "f.txt"
            assert not (host.ws / "d").is_symlink() and restored.is_file(), done.text
    shown = cli.run(["diff", session_id], host.env(), host.root)
    assert b"decoy" not in shown.stdout, shown.text
    check_unchanged(before, host.snapshot())
