"""Output files written whole or not at all, never over an existing file unless asked.

Every output (artifacts, figures, tables) is written to a temporary file beside its destination and renamed onto
it on success, so no reader sees half a file and a failure leaves what was there. The file gets the permissions a
plain `open` would give under the process umask (0644 under 022), not mkstemp's 0600.
"""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from pillar_cli.errors import ArtifactError, UsageError, param


def refuse_existing(path: Path, force: bool) -> None:
    if path.exists() and not force:
        raise UsageError(f"output {path} exists; pass {param('force', True)} to replace it")


@contextmanager
def replacing(path: Path, force: bool = False) -> Iterator[Path]:
    """A temporary path beside `path`, renamed onto it when the block succeeds; an existing `path` is refused
    unless `force`."""
    refuse_existing(path, force)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ArtifactError(f"cannot write {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise ArtifactError(f"cannot write {path}: directory {directory} is not writable")
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    os.close(handle)
    try:
        os.chmod(name, 0o666 & ~_umask())
        yield Path(name)
        refuse_existing(path, force)  # created by someone else meanwhile
        os.replace(name, path)
    finally:
        Path(name).unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
