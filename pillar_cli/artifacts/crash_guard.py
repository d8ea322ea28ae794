"""A first reading of an untrusted HDF5 file in a forked child.

libhdf5 can crash the interpreter (a segmentation fault) or loop forever on a corrupted file, and no exception
handler catches either. So every artifact is first read in a child process forked for it: the child walks what
the read will touch (attributes, links, every dataset's bytes for the content hash); a crash there, or a
reading that outlasts any honest one of a file that size, becomes one error line in the parent, and a file the
child verified is not hashed a second time. Forking shares the parent's imports, so the child costs
milliseconds on top of the hashing it takes over. Where `os.fork` does not exist the file is read in process
only, as before.

A file a child has read whole and found intact, or that this process wrote itself (artifacts.write), is
remembered for the life of the process by its identity (device, inode, size, modification and change times):
reading it again (another split of the same embeddings, the next stage of a pipeline run in one process) needs
neither a child nor a rehash, while any rewrite gives it another identity.
"""

from __future__ import annotations

import faulthandler
import os
import select
import signal
import time
from collections.abc import Callable
from pathlib import Path

import h5py

from pillar_cli.artifacts.layout import CORRUPT_HINT
from pillar_cli.errors import ArtifactError

BASE_SECONDS, SLOWEST_READ_BYTES_PER_SECOND = 20.0, 10e6  # a disk slower than this is not assumed


def reading_limit(path: str | Path) -> float:
    """Seconds after which the child's reading is taken for a loop in libhdf5, not a slow disk."""
    return BASE_SECONDS + os.path.getsize(path) / SLOWEST_READ_BYTES_PER_SECOND


def passes_in_child(path: str | Path, check: Callable[[h5py.File], object]) -> bool:
    """Whether `check` ran without error on the open file in a forked child. False when it raised (the
    caller's own read raises that error in process) or when the platform cannot fork; a crash of the child, or
    a reading past `reading_limit`, is an ArtifactError."""
    if not hasattr(os, "fork"):
        return False
    limit = reading_limit(path)
    ended, alive = os.pipe()  # the child holds `alive` open until it exits: `ended` reads end-of-file then
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers or flushes its buffers
        code = 1
        try:
            os.close(ended)
            faulthandler.disable()
            with h5py.File(path, "r") as h5:
                check(h5)
            code = 0
        finally:
            os._exit(code)
    os.close(alive)
    try:
        status = _exit_status(pid, ended, limit)
    except BaseException:  # interrupted: the child's reading is of no use any more
        _kill(pid)
        raise
    finally:
        os.close(ended)
    if status is None:
        _kill(pid)
        raise ArtifactError(
            f"{path} is not a readable pillar artifact (the HDF5 library did not finish reading it "
            f"in {limit:.0f} s)",
            hint=CORRUPT_HINT,
        )
    if os.WIFSIGNALED(status):
        crash = signal.Signals(os.WTERMSIG(status)).name
        raise ArtifactError(
            f"{path} is not a readable pillar artifact (the HDF5 library crashed reading it: {crash})",
            hint=CORRUPT_HINT,
        )
    return os.WEXITSTATUS(status) == 0


def _exit_status(pid: int, ended: int, limit: float) -> int | None:
    """The child's wait status as soon as it exits (its end of the pipe closes: `ended` reads end-of-file), or
    None once `limit` seconds have passed. Every tenth of a second the child is also asked directly: a process
    another thread forked in the instant the pipe was open holds its end too."""
    deadline = time.monotonic() + limit
    while (left := deadline - time.monotonic()) > 0:
        if select.select([ended], [], [], min(left, 0.1))[0]:  # end of file: the child is exiting
            return os.waitpid(pid, 0)[1]
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
    return None


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def identity(path: str | Path | int) -> tuple[int, ...]:
    """What changes when a file (a path, or an open descriptor) is replaced or rewritten between the child's
    reading and the parent's."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


# identities of the files found intact, or written, by this process
_found_intact: set[tuple[int, ...]] = set()


def remember_intact(file_identity: tuple[int, ...]) -> None:
    """The file of this identity was read whole by a child and found intact, or written by this process."""
    _found_intact.add(file_identity)


def known_or_passes_in_child(path: str | Path, check: Callable[[h5py.File], object]) -> bool:
    """Whether the file needs no rehash: this process found it intact (or wrote it) as it is now, or `check`
    ran without error on it in a forked child (`passes_in_child`, whose errors it raises)."""
    return identity(path) in _found_intact or passes_in_child(path, check)
