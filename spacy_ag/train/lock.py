"""A run's hold on its output directory: one run per OUTPUT, no leftovers, SIGTERM as an interruption.

Every trainer (engine, topics, pipeline) writes OUTPUT only inside ``with output_lock(out):``,
which

* takes an exclusive flock on ``OUTPUT/.lock``, without waiting: a second run on the same
  OUTPUT fails at once with one line (E041). The kernel drops the lock when the process ends,
  however it ends (its forked workers share it until they end too), so there is no stale lock
  to remove by hand;
* removes what atomic writes killed on the way left in OUTPUT and OUTPUT/checkpoints
  (`spacy_ag.archive.remove_leftovers`), and says so in one line;
* makes SIGTERM, in the main thread, raise `Terminated` (a KeyboardInterrupt), so that a
  terminated run stops as an interrupted one does (checkpoints, the resume hint, temporary
  files removed) and the command line exits with 143 instead of 130.
"""
from __future__ import annotations

import contextlib
import errno
import os
import signal
from pathlib import Path
from typing import Iterator

from ..archive import remove_leftovers
from ..runs.signals import Terminated, sigterm_as_interrupt
from ..errors import Errors, TrainingLayerError
from .progress import TrainingStopped, info, warn

try:
    import fcntl
except ImportError:  # not POSIX: runs are not locked
    fcntl = None

__all__ = ["LOCK_FILE", "Terminated", "interrupted", "output_lock", "stopped"]

LOCK_FILE = ".lock"


def interrupted(err: BaseException) -> str:
    """'interrupted', naming the signal when it was not Ctrl-C (SIGINT)."""
    signum = getattr(err, "signum", signal.SIGINT)
    return "interrupted" if signum == signal.SIGINT else f"interrupted by {signal.Signals(signum).name}"


def stopped(message: str, err: BaseException) -> TrainingStopped:
    """The TrainingStopped to raise for the interruption `err`; it keeps the signal for the exit code."""
    stop = TrainingStopped(message)
    stop.signum = getattr(err, "signum", signal.SIGINT)
    return stop


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[Path]:
    """Create OUTPUT, hold its lock, clear the leftovers of killed writes; SIGTERM raises `Terminated`."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fd = os.open(out / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise TrainingLayerError(Errors.E041.format(path=out, holder=_holder(fd))) from None
        except OSError as err:  # a file system without locks (some network mounts)
            if err.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            warn(Errors.W505.format(path=out / LOCK_FILE, reason=os.strerror(err.errno)))
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        removed = [name for name in remove_leftovers(out)] + \
                  [f"checkpoints/{name}" for name in remove_leftovers(out / "checkpoints")]
        if removed:
            info(f"Removed {len(removed)} temporary file{'s' if len(removed) > 1 else ''} left in {out} by an "
                 f"interrupted write: {', '.join(removed)}")
        with sigterm_as_interrupt():
            yield out
    finally:
        os.close(fd)  # releases the lock (the file stays: removing it would race with the next run)
