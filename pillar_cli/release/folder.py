"""An hf export's folder: checked before any work, written beside its place and swapped in whole.

--force replaces only what it names: a folder an hf export wrote (its weights, card and config.json, nothing
else). A target holding anything else — a user's files, an input — or that is the working directory or a
folder above it or above an input is refused, with --force or without, since replacing it would delete what
the export did not write.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pillar_cli.artifacts.files import plain_permissions
from pillar_cli.artifacts.outputs import put_in_place
from pillar_cli.errors import UsageError, param
from pillar_cli.release.exported import HF_FILES, HF_SIGNATURE, HF_WEIGHTS

WRITTEN = (
    HF_WEIGHTS,
    *HF_FILES,
    HF_SIGNATURE,
)  # every file an hf export writes (the signature where it signs)


def check_folder_target(out: Path, inputs: Sequence[Path | str], force: bool) -> None:
    """Refuse a folder target that replacing would delete more than an earlier export's files from (one
    line)."""
    target = out.resolve()
    here = Path.cwd().resolve()
    if target == here or target in here.parents:
        raise UsageError(
            f"{out} is the working directory or a folder above it: an hf export writes a folder of its own",
            hint=f"pass {param('out')} a new folder's name",
        )
    for given in inputs:
        source = Path(given).resolve()
        if target == source or target in source.parents:
            raise UsageError(
                f"{out} holds the input {given}: an hf export writes a folder of its own",
                hint=f"pass {param('out')} a new folder's name",
            )
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise UsageError(
            f"{out} exists and is not a folder an hf export wrote",
            hint=f"pass {param('out')} a new folder's name",
        )
    if out.is_dir():
        others = sorted(name for name in os.listdir(out) if name not in WRITTEN)
        if others:
            raise UsageError(
                f"{out} holds {others[0]}, which an hf export does not write: {param('force', True)} "
                "replaces only a folder an hf export wrote",
                hint=f"pass {param('out')} a new folder's name",
            )
        if os.listdir(out) and not (out / HF_WEIGHTS).is_file():  # an export's files without its weights
            raise UsageError(
                f"{out} holds no {HF_WEIGHTS}: it is not a folder an hf export wrote, and "
                f"{param('force', True)} replaces only such a folder",
                hint=f"pass {param('out')} a new folder's name",
            )
        if not force:
            raise UsageError(f"output {out} exists; pass {param('force', True)} to replace it")


def write_folder(out: Path, write: Callable[[Path], None]) -> None:
    """Fill a new folder beside `out` with `write`, then swap it in (artifacts/outputs.py): an earlier
    export's folder is set aside and removed only once the new one is in place and the command ends; an
    interrupted or failed write leaves `out` as it was."""
    target = out.resolve()
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        write(partial)
        plain_permissions(partial)
        put_in_place(partial, target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
