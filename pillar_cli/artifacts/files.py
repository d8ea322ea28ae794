"""Output files written whole or not at all, never over an existing file unless asked.

Every output (artifacts, figures, tables) is written to a temporary file beside its destination and renamed
onto it on success, so no reader sees half a file and a failure leaves what was there. The file gets the
permissions a plain `open` would give under the process umask (0644 under 022), not mkstemp's 0600. A write
whose size is known is refused before it starts when its file system lacks the room: libhdf5 cannot recover
from a write that fails for want of space (the process then dies at exit).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from pillar_cli.artifacts.names import NAME_MAX, sibling
from pillar_cli.artifacts.outputs import put_in_place
from pillar_cli.errors import ArtifactError, UsageError, param

STDOUT = Path("-")  # an output named '-': standard output, where a command writes there
SPACE_MARGIN = 1 << 20  # room left over after a write: file-system metadata, HDF5's allocation granularity


def refuse_existing(path: Path, force: bool) -> None:
    """Refuse an output whose name no file system takes, or that exists (a link too, dangling or not) unless
    `force`."""
    if len(path.name.encode()) > NAME_MAX:
        raise UsageError(
            f"output name {path.name[:40]}… is {len(path.name.encode())} bytes long; file names "
            f"hold at most {NAME_MAX}"
        )
    if (path.exists() or path.is_symlink()) and not force:
        raise UsageError(f"output {path} exists; pass {param('force', True)} to replace it")


def require_space(directory: Path, size: int, what: str) -> None:
    """Refuse to start writing `size` bytes where the file system has less room (plus a margin)."""
    free = shutil.disk_usage(directory).free
    if size + SPACE_MARGIN > free:
        raise ArtifactError(
            f"{what} needs about {_mib(size + SPACE_MARGIN)} in {os.path.abspath(directory)}; "
            f"{_mib(free)} free there",
            hint="free some space or write elsewhere",
        )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f} MiB"


@contextmanager
def replacing(path: Path, force: bool = False, size: int | None = None) -> Iterator[Path]:
    """A temporary path beside `path`, renamed onto it when the block succeeds; an existing `path` is refused
    unless `force`, and a write of a known `size` (bytes) that the file system has no room for."""
    refuse_existing(path, force)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ArtifactError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise ArtifactError(f"cannot write {path}: directory {directory} is not writable")
    if size is not None:
        require_space(directory, size, f"writing {path}")
    prefix = sibling(Path("." + path.name), ".", reserve=len("XXXXXXXX.tmp")).name
    handle, name = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=directory)
    os.close(handle)
    try:
        yield Path(name)
        if not force and (path.exists() or path.is_symlink()):  # another writer's, made while this one ran
            raise UsageError(
                f"output {path} appeared while this command ran (another writer?); nothing was replaced",
                hint=f"write another output, or pass {param('force', True)} to replace it",
            )
        plain_permissions(Path(name))  # after the writer, which may have made the file anew (safetensors)
        put_in_place(Path(name), path)
    finally:
        Path(name).unlink(missing_ok=True)


def plain_permissions(path: Path) -> None:
    """The permissions a plain `open` or `mkdir` would give under the process umask (0644 and 0755 under
    022), not a temporary file's or folder's 0600 and 0700: a folder's files too."""
    mask = _umask()
    for item in [path, *(path.rglob("*") if path.is_dir() else ())]:
        os.chmod(item, (0o777 if item.is_dir() else 0o666) & ~mask)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextmanager
def replacing_together(paths: Sequence[Path | None], force: bool = False) -> Iterator[list[Path | None]]:
    """Temporary paths for the several outputs of one command (None stays None), all renamed onto their
    destinations only when the whole block succeeds: a failure (of any of them, or of an artifact written
    inside the block) leaves none of them behind."""
    with ExitStack() as stack:
        yield [None if path is None else stack.enter_context(replacing(path, force)) for path in paths]
