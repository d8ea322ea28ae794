"""A first reading of an untrusted HDF5 file in a forked child.

libhdf5 can crash the interpreter (a segmentation fault) or loop forever on a corrupted file, and no exception
handler catches either. So every artifact is first read in a child process forked for it: the child walks what
the read will touch (attributes, links, every dataset's bytes for the content hash); a crash there, or a
reading that stalls, becomes one error line in the parent, and a file the child verified is not hashed a
second time. The child reports each block of rows it reads (layout.row_blocks), so a slow disk is told from a
loop by the speed measured on the file itself: the reading is stopped only when no block arrives for
BASE_SECONDS plus STALL_FACTOR times the longest wait for a block so far. Forking shares the parent's imports,
so the child costs milliseconds on top of the hashing it takes over. Where `os.fork` does not exist the file
is read in process only, as before.

A file a child has found intact (whole, or the group a read loads), or that this process wrote itself
(artifacts.write), is remembered for the life of the process by its identity (device, inode, size,
modification and change times): reading what was verified again (the next stage of a pipeline run in one
process, a split read twice) needs neither a child nor a rehash, while any rewrite gives the file another
identity.
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

from pillar_cli.artifacts import layout
from pillar_cli.artifacts.layout import BLOCK_BYTES, CORRUPT_HINT
from pillar_cli.errors import ArtifactError

BASE_SECONDS = 20.0  # opening the file and reading its attributes, and the slack above any block's wait
STALL_FACTOR = 4.0  # a block may take this many times longer than the slowest one before it so far
# the first block, before any speed is measured: a disk slower than this is not assumed
FIRST_BLOCK_BYTES_PER_SECOND = 10e6


def first_block_limit(path: str | Path) -> float:
    """Seconds the child may take to read its first block of rows, before the disk's speed is known."""
    return BASE_SECONDS + min(os.path.getsize(path), BLOCK_BYTES) / FIRST_BLOCK_BYTES_PER_SECOND


def passes_in_child(path: str | Path, check: Callable[[h5py.File], object]) -> bool:
    """Whether `check` ran without error on the open file in a forked child. False when it raised (the
    caller's own read raises that error in process) or when the platform cannot fork; a crash of the child, or
    a reading that stalls (`_exit_status`), is an ArtifactError."""
    if not hasattr(os, "fork"):
        return False
    ended, alive = os.pipe()  # the child holds `alive` open until it exits: `ended` reads end-of-file then
    pid = os.fork()
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers or flushes its buffers
        code = 1
        try:
            os.close(ended)
            faulthandler.disable()
            layout.on_block_read = lambda: _tell(alive)
            with h5py.File(path, "r") as h5:
                check(h5)
            code = 0
        finally:
            os._exit(code)
    os.close(alive)
    try:
        status, stalled = _exit_status(pid, ended, first_block_limit(path))
    except BaseException:  # interrupted: the child's reading is of no use any more
        _kill(pid)
        raise
    finally:
        os.close(ended)
    if status is None:
        _kill(pid)
        raise ArtifactError(
            f"{path} is not a readable pillar artifact (the HDF5 library read nothing of it for "
            f"{stalled:.0f} s)",
            hint=CORRUPT_HINT,
        )
    if os.WIFSIGNALED(status):
        crash = signal.Signals(os.WTERMSIG(status)).name
        raise ArtifactError(
            f"{path} is not a readable pillar artifact (the HDF5 library crashed reading it: {crash})",
            hint=CORRUPT_HINT,
        )
    return os.WEXITSTATUS(status) == 0


def _exit_status(pid: int, ended: int, first_limit: float) -> tuple[int | None, float]:
    """(the child's wait status as soon as it exits (its end of the pipe closes: `ended` reads end-of-file),
    or None once it has read no block for its limit; the seconds it last waited). The first block may take
    `first_limit`, each later one BASE_SECONDS + STALL_FACTOR × the longest wait so far. Every tenth of a
    second the child is also asked directly: a process another thread forked in the instant the pipe was open
    holds its end too."""
    last = time.monotonic()
    deadline, longest = last + first_limit, 0.0
    while (left := deadline - time.monotonic()) > 0:
        if select.select([ended], [], [], min(left, 0.1))[0]:
            if not os.read(ended, 4096):  # end of file: the child is exiting
                return os.waitpid(pid, 0)[1], 0.0
            now = time.monotonic()  # a block read
            longest, last = max(longest, now - last), now
            deadline = now + BASE_SECONDS + STALL_FACTOR * longest
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, 0.0
    return None, time.monotonic() - last


def _tell(alive: int) -> None:
    """The child has read one more block."""
    os.write(alive, b".")


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def identity(path: str | Path | int) -> tuple[int, ...]:
    """What changes when a file (a path, or an open descriptor) is replaced or rewritten between the child's
    reading and the parent's."""
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


# identities of the files found intact, or written, by this process: the groups whose arrays were rehashed
# (None: every array)
_found_intact: dict[tuple[int, ...], frozenset[str] | None] = {}


def remember_intact(file_identity: tuple[int, ...], under: str | None = None) -> None:
    """The file of this identity was read by a child and found intact, the arrays under the group `under`
    (None: every array) rehashed; or it was written by this process."""
    known = _found_intact.get(file_identity, frozenset())
    _found_intact[file_identity] = None if known is None or under is None else known | {under}


def known_or_passes_in_child(
    path: str | Path, check: Callable[[h5py.File], object], under: str | None = None
) -> bool:
    """Whether the file needs no rehash of its arrays under `under` (None: all): this process found them
    intact (or wrote the file) as it is now, or `check` ran without error on it in a forked child
    (`passes_in_child`, whose errors it raises)."""
    file_identity = identity(path)
    if file_identity in _found_intact:
        known = _found_intact[file_identity]
        if known is None or (under is not None and under in known):
            return True
    return passes_in_child(path, check)
