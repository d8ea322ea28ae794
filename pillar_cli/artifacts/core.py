"""HDF5 artifacts, schema version 3: the only way stages exchange data.

Invariants: an artifact is written to a temporary file beside its destination and renamed on success, so a
reader never sees half a file and a failed write never destroys an existing one; reading checks the kind and
the schema version; every artifact carries its provenance (command, resolved config, input content hashes) and
a content hash over its logical content (arrays and attributes, not file bytes, which hold timestamps), and a
record hash binding that provenance to the content.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from pillar_cli.artifacts.artifact import Artifact, InputRef, Provenance
from pillar_cli.artifacts.crash_guard import identity, known_or_passes_in_child, remember_intact
from pillar_cli.artifacts.files import replacing
from pillar_cli.artifacts.integrity import array_digests, combined_hash, record_hash, verify
from pillar_cli.artifacts.layout import (
    CORRUPT_HINT,
    RESERVED_ATTRS,
    json_default,
    read_arrays,
    read_attr,
    read_kind_attrs,
    write_array,
)
from pillar_cli.artifacts.schema import validate
from pillar_cli.artifacts.sharing import SHAREABLE_KINDS, shared_input
from pillar_cli.artifacts.stored_rows import StoredRows
from pillar_cli.errors import ArtifactError, LibraryStateError, PillarError, first_line, param
from pillar_cli.version import __version__

SCHEMA_VERSION = 3
KINDS = (
    "embeddings",
    "embedding-shard",
    "projection",
    "assumptions",
    "model",
    "gsd",
    "evaluation",
    "audit",
    "classifier",
)


def _created_at() -> str:
    """Now, or SOURCE_DATE_EPOCH when set (reproducible artifacts: same inputs, same bytes)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (
        _dt.datetime.fromtimestamp(int(epoch), _dt.timezone.utc)
        if epoch
        else _dt.datetime.now(_dt.timezone.utc)
    )
    return moment.isoformat(timespec="seconds")


def write(
    path: str | Path,
    artifact: Artifact,
    *,
    inputs: list[InputRef] | tuple[InputRef, ...] = (),
    config: dict[str, Any] | None = None,
    command: list[str] | None = None,
    force: bool = False,
) -> Artifact:
    """Atomically write `artifact` to `path` (an existing file only with `force`); returns it with its path
    and provenance filled in."""
    if artifact.kind not in KINDS:
        raise ArtifactError(f"unknown artifact kind '{artifact.kind}' (known: {', '.join(KINDS)})")
    path = Path(path)
    try:
        digests = array_digests(artifact.arrays)
        provenance = Provenance(
            pillar_version=__version__,
            created_at=_created_at(),
            command=list(command if command is not None else sys.argv),
            config=dict(config or {}),
            inputs=[shared_input(ref) for ref in inputs]
            if artifact.kind in SHAREABLE_KINDS
            else list(inputs),
            content_hash=combined_hash(digests, artifact.attrs),
        )
        handle = -1
        try:
            with replacing(path, force, size=_stored_size(artifact)) as tmp:
                with h5py.File(tmp, "w") as h5:
                    _write_root_attrs(h5, artifact, provenance, digests)
                    for name, array in artifact.arrays.items():  # an h5py dataset is copied by blocks of rows
                        write_array(h5, name, array if isinstance(array, h5py.Dataset) else np.asarray(array))
                # the file written, followed through its rename onto `path`
                handle = os.open(tmp, os.O_RDONLY)
            # this process's own bytes: reading them needs no child, no rehash
            remember_intact(identity(handle))
        finally:
            if handle >= 0:
                os.close(handle)
    except PillarError:  # refused by the checks above (an output that exists or appeared): as they said
        raise
    except (OSError, ValueError, TypeError, RuntimeError) as err:
        failed = _HDF5_WRITE_FAILURE.search(str(err))
        if failed:  # libhdf5 failed a write of its own (a full disk): its state is broken
            raise LibraryStateError(f"cannot write {path}: {failed.group(1)}") from err
        raise ArtifactError(f"cannot write {path}: {first_line(err)}") from err
    artifact.path, artifact.provenance = str(path), provenance
    return artifact


_HDF5_WRITE_FAILURE = re.compile(r"file write failed:.*?error message = '([^']*)'", re.S)


def _stored_size(artifact: Artifact) -> int:
    """Bytes the artifact takes on disk, about: its arrays, plus attributes and HDF5's structures."""
    arrays = sum(
        int(np.prod(a.shape, dtype=np.int64)) * np.dtype(a.dtype).itemsize for a in artifact.arrays.values()
    )
    return arrays + len(json.dumps(artifact.attrs, default=json_default)) + (64 << 10)


def _write_root_attrs(
    h5: h5py.File, artifact: Artifact, provenance: Provenance, digests: dict[str, str]
) -> None:
    record = {
        "pillar_kind": artifact.kind,
        "schema_version": SCHEMA_VERSION,
        "pillar_version": provenance.pillar_version,
        "created_at": provenance.created_at,
        "content_hash": provenance.content_hash,
        "command": json.dumps(provenance.command),
        "config": json.dumps(provenance.config, default=str),
        "inputs": json.dumps([ref.to_dict() for ref in provenance.inputs]),
    }
    for key, value in record.items():
        h5.attrs[key] = value
    h5.attrs["record_hash"] = record_hash(record)
    h5.attrs["array_digests"] = json.dumps(digests)
    json_attrs = []
    for key, value in artifact.attrs.items():
        if key in RESERVED_ATTRS:
            raise ArtifactError(f"attribute name '{key}' is reserved for provenance")
        if isinstance(value, (bool, int, float)) or (isinstance(value, str) and "\x00" not in value):
            h5.attrs[key] = value  # HDF5 strings cannot hold NUL: such strings go through JSON below
        else:
            h5.attrs[key] = json.dumps(value, default=json_default)
            json_attrs.append(key)
    h5.attrs["json_attrs"] = json.dumps(json_attrs)


def read(
    path: str | Path,
    kind: str | tuple[str, ...],
    *,
    under: str | None = None,
    check_schema: bool = True,
    on_disk: frozenset[str] = frozenset(),
) -> Artifact:
    """Read an artifact, refusing the wrong kind, an unknown schema version or content that no longer matches
    its hashes (the attributes and which arrays there are always; the arrays it loads or leaves on disk
    rehashed, those of other groups not). The file is first read
    in a forked child (crash_guard.py): a corrupted file that crashes libhdf5 is one error, not a dead
    interpreter.

    `under` restricts the arrays loaded to one group (e.g. one split of an embeddings file). `check_schema`:
    refuse arrays and attributes that the stages reading this kind could not use (schema.py). `on_disk`:
    datasets left in the file (under `under`), read a block at a time where they are used
    (artifacts/stored_rows.py).
    """
    expected = (kind,) if isinstance(kind, str) else kind
    path = Path(path)
    if not path.exists():
        raise ArtifactError(f"artifact not found: {path}")
    try:
        before = identity(path)
        verified = known_or_passes_in_child(
            path, lambda h5: _checked_in_child(h5, path, expected, under), under
        )
        with h5py.File(path, "r") as h5:
            found = _kind_checked(h5, path, expected)
            verify(h5, path, rehash=not verified, under=under)
            arrays: dict[str, Any] = read_arrays(h5, path, under, skip=on_disk)
            arrays |= {name: StoredRows.of(path, h5[name], before) for name in on_disk if name in h5}
            artifact = Artifact(found, arrays, read_kind_attrs(h5), str(path), _read_provenance(h5))
        if verified and identity(path) != before:
            raise ArtifactError(
                f"{path} changed while it was read", hint="read it again once nothing writes it"
            )
        if verified:
            remember_intact(before, under)
        if check_schema:
            validate(found, artifact.arrays, artifact.attrs, str(path))
    except ArtifactError:
        raise
    except (OSError, KeyError, ValueError, TypeError, RuntimeError) as err:
        raise ArtifactError(
            f"{path} is not a readable pillar artifact ({first_line(err)})", hint=CORRUPT_HINT
        ) from err
    return artifact


def _checked_in_child(h5: h5py.File, path: Path, expected: tuple[str, ...], under: str | None) -> None:
    """What `read` checks of a file in a forked child: its kind, its hashes (the arrays under `under`
    rehashed), and that its attributes and provenance read."""
    _kind_checked(h5, path, expected)
    verify(h5, path, under=under)
    read_kind_attrs(h5)
    _read_provenance(h5)


def _kind_checked(h5: h5py.File, path: Path, expected: tuple[str, ...]) -> str:
    """The file's kind, refusing another kind or another schema version."""
    found = read_attr(h5, "pillar_kind")
    if found is None:
        raise ArtifactError(f"{path} is not a pillar artifact (no 'pillar_kind' attribute)")
    if found not in expected:
        hint = (
            f"merge all shards first (embed's {param('merge', True)})" if found == "embedding-shard" else None
        )
        raise ArtifactError(f"{path} is a {found} artifact, expected {' or '.join(expected)}", hint=hint)
    version = read_attr(h5, "schema_version")
    if version != SCHEMA_VERSION:
        raise ArtifactError(
            f"{path} has schema version {version!r}; this pillar reads version {SCHEMA_VERSION}",
            hint="upgrade pillar or recreate the artifact",
        )
    return found


def _read_provenance(h5: h5py.File) -> Provenance:
    """The provenance attributes, refusing any of the wrong shape (what `inspect` and the overlap checks
    walk)."""
    command, config, inputs = (json.loads(read_attr(h5, key)) for key in ("command", "config", "inputs"))
    texts = [read_attr(h5, key) for key in ("pillar_version", "created_at", "content_hash")]
    problem = (
        "'command' is not a list of strings"
        if not _strings(command)
        else "'config' is not a mapping"
        if not isinstance(config, dict)
        else "'inputs' is not a list of input references"
        if not _input_refs(inputs)
        else "'pillar_version', 'created_at' or 'content_hash' is not text"
        if not _strings(texts)
        else None
    )
    if problem:
        raise ArtifactError(f"{h5.filename} has a malformed provenance: {problem}", hint=CORRUPT_HINT)
    return Provenance(
        pillar_version=texts[0],
        created_at=texts[1],
        command=command,
        config=config,
        inputs=[InputRef(**ref) for ref in inputs],
        content_hash=texts[2],
    )


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(value, str) for value in values)


def _input_refs(refs: Any) -> bool:
    return isinstance(refs, list) and all(
        isinstance(ref, dict)
        and set(ref) == {"path", "kind", "content_hash", "split"}
        and _strings([ref["path"], ref["kind"], ref["content_hash"]])
        and isinstance(ref["split"], (str, type(None)))
        for ref in refs
    )


def read_provenance(path: str | Path) -> tuple[str, Provenance]:
    """Kind and provenance of an artifact, reading its attributes only (no arrays)."""
    try:
        known_or_passes_in_child(path, _read_provenance)
        with h5py.File(path, "r") as h5:
            kind = read_attr(h5, "pillar_kind")
            if kind is None:
                raise ArtifactError(f"{path} is not a pillar artifact (no 'pillar_kind' attribute)")
            return kind, _read_provenance(h5)
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ArtifactError(f"{path} is not a readable pillar artifact ({first_line(err)})") from err
