"""Names of the files written beside an output (temporary, scratch, set aside), cut to what a file system
takes."""

from __future__ import annotations

import hashlib
from pathlib import Path

NAME_MAX = 255  # bytes in one file name (Linux, macOS)


def sibling(path: Path, suffix: str, reserve: int = 0) -> Path:
    """`path` with `suffix` appended to its name (a scratch or temporary file beside it), cut to a name the
    file system takes: a long name keeps its start and a digest of the whole, so each destination has its
    own."""
    name = path.name + suffix
    if len(name.encode()) + reserve <= NAME_MAX:
        return path.with_name(name)
    digest = hashlib.sha256(path.name.encode()).hexdigest()[:12]
    room = NAME_MAX - reserve - len(suffix.encode()) - len(digest) - 1
    start = path.name.encode()[:room].decode("utf-8", "ignore")
    return path.with_name(f"{start}~{digest}{suffix}")
