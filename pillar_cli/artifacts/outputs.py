"""A command's outputs as one: while a command runs (`one_command`), every output it puts in place
(`put_in_place`: an artifact, a figure, a signature, an export folder) can still be taken back. If the command
does not finish — an error, Ctrl-C, SIGTERM at any point, even after a file is in place — each is removed and
the file or folder --force replaced is put back, so that an interrupted command leaves what was there before
and nothing else. The replaced outputs wait beside their places (hidden, `.NAME.previous`) until the command
ends. Outside a command (the Python API) an output is final once in place."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pillar_cli.artifacts.names import sibling


@dataclass
class _Placed:
    path: Path
    aside: Path | None  # where the output it replaced waits (None: there was none)
    identity: tuple[int, int] | None = None  # (device, inode) of what was put in place: only that is removed
    claimed: bool = False  # written by other means (claim): whatever is at the place is removed


_running: list[list[_Placed]] = []  # the outputs of each running command, innermost last


@contextmanager
def one_command() -> Iterator[None]:
    """The outputs put in place inside the block are taken back unless it ends without an exception."""
    placed: list[_Placed] = []
    _running.append(placed)
    try:
        yield
    except BaseException:
        for output in reversed(placed):
            _take_back(output)
        raise
    finally:
        _running.pop()
    for output in placed:
        if output.aside is not None:
            _remove(output.aside)


def put_in_place(made: Path, path: Path) -> None:
    """Rename `made` (a finished file or folder beside `path`) onto `path`. A folder it replaces is set aside
    first (a rename cannot replace a folder that holds files) and, outside a command, removed after."""
    replaces = path.exists() or path.is_symlink()
    if not _running:
        aside = _aside(path) if replaces and path.is_dir() and not path.is_symlink() else None
        if aside is not None:
            os.replace(path, aside)
        os.replace(made, path)
        if aside is not None:
            _remove(aside)
        return
    output = _Placed(path, _aside(path) if replaces else None)
    _running[-1].append(output)  # before any rename: an interrupt between them still restores
    if output.aside is not None:
        os.replace(path, output.aside)
    os.replace(made, path)
    stat = os.lstat(path)
    output.identity = (stat.st_dev, stat.st_ino)


def claim(path: Path) -> None:
    """Inside a command, `path` is an output it writes by other means (a signer writing its bundle): what is
    there is set aside now, and whatever is there if the command does not finish is removed."""
    if not _running:
        return
    output = _Placed(path, _aside(path) if path.exists() or path.is_symlink() else None, claimed=True)
    _running[-1].append(output)
    if output.aside is not None:
        os.replace(path, output.aside)


def _aside(path: Path) -> Path:
    return path.with_name(sibling(Path("." + path.name), ".previous").name)


def _take_back(output: _Placed) -> None:
    """Remove what was put at the output's place (if it is still that) and put back what it replaced."""
    try:
        stat = os.lstat(output.path)
    except FileNotFoundError:
        stat = None
    if stat is not None and (output.claimed or output.identity == (stat.st_dev, stat.st_ino)):
        _remove(output.path)
        stat = None
    if output.aside is not None and (output.aside.exists() or output.aside.is_symlink()) and stat is None:
        os.replace(output.aside, output.path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
