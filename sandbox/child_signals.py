"""Signal dispositions for the programs the agent runs: as a fresh terminal login has them.

Python ignores SIGPIPE and SIGXFSZ, and a parent may have left SIGINT and SIGQUIT ignored (a
job started with `&` from a script, `nohup`): exec keeps an ignored signal ignored, and bash
cannot undo one it was started with. The agent's shell would then print "Broken pipe" for
`yes | head -1` and never stop on C-c, so a pty child resets them before it runs bash.
"""

from __future__ import annotations

import signal
from collections.abc import Callable


def defaults_for_child() -> Callable[[], None]:
    """A `preexec_fn` that puts every signal ignored here back to its default in the child."""
    ignored = tuple(
        sig
        for sig in signal.valid_signals()
        if sig not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(sig) == signal.SIG_IGN
    )

    def reset() -> None:
        for sig in ignored:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())

    return reset
