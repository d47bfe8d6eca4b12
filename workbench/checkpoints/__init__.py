"""The workspace's files over a session: checkpoints recorded, stored, restored and rewound.

- `recorder.py`: after each action that can change files, the sandbox is asked to checkpoint;
- `store.py`: where a workspace's checkpoint store lives, and the record of rewinds;
- `points.py`: a session's checkpoints step by step, and the plans to rewind and undo;
- `restore.py`: a workspace put back to a point of a session; `rewind_here.py`: the TUI's
  "rewind to here"; `rewind_undo.py`: which rewind an undo undoes next.

The git plumbing itself is the sandbox's (`sandbox/checkpoints.py`). The commands are
`workbench/cli/checkpoints.py`, `rewind.py` and `diff.py`. Never imports a front end.

Imports: config, session, tools.
"""
