"""One way to stop, whatever stops us: Ctrl-C (SIGINT) and `kill` (SIGTERM) alike.

`main` runs each command under `stopping_on_signals`. The first SIGINT or SIGTERM raises
`Stopped`, a KeyboardInterrupt, in the main thread, so every `finally` and `with` on the way
out runs as for Ctrl-C: `replace_atomically` removes its temporary file, `WorkerPool`
terminates its workers (then kills those still alive after `workers.GRACE`), a Ray map
cancels its tasks. From the first signal on, both are ignored: a second Ctrl-C can no longer
interrupt that cleanup half-way, which printed a KeyboardInterrupt traceback, or left a lock
held and the process hung. The command then exits with 128 + the signal's number (130 for
SIGINT, 143 for SIGTERM), the shell's convention.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)
WORDS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Stopped(KeyboardInterrupt):
    """The first SIGINT or SIGTERM a command received (module docstring)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def code(self) -> int:
        """The exit code: 128 + the signal's number."""
        return 128 + self.signum

    @property
    def word(self) -> str:
        """What happened, for the one line on stderr: "interrupted" or "terminated"."""
        return WORDS[signal.Signals(self.signum)]


def _stop(signum: int, frame: FrameType | None) -> None:
    """Ignore SIGINT and SIGTERM from now on, and raise `Stopped`."""
    for each in SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    raise Stopped(signum)


@contextmanager
def stopping_on_signals() -> Iterator[None]:
    """Turn the first SIGINT or SIGTERM into `Stopped` for the block; the handlers before it
    are restored after, unless a signal stopped it (the process is then on its way out, and
    ignores them to the end). Only the main thread receives signals: elsewhere, nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {each: signal.signal(each, _stop) for each in SIGNALS}
    stopped = False
    try:
        yield
    except Stopped:
        stopped = True
        raise
    finally:
        if not stopped:
            for each, handler in before.items():
                signal.signal(each, handler)
