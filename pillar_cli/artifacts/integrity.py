"""Content hashes: sha256 over the digests of an artifact's arrays (each over its name, dtype, shape and
bytes) and its attributes; record hashes: sha256 over the content hash and the provenance stored beside it
(command, config, inputs).

`write` stores the array digests and both hashes; every `read` checks the content hash from the stored digests
and the attributes, rehashes the arrays it reads (streaming them block by block) against their digests, and
refuses a file whose content or provenance no longer matches: an artifact edited after it was written is never
used silently, and reading one split of a large file does not hash the others. The content hash leaves out the
write time and command, so that equal content hashes equally; the record hash binds the provenance to that
content. Both detect edits, not forgeries: anyone can re-hash a file, so no check that guards private data
relies on provenance alone.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from pillar_cli.artifacts.layout import json_default, read_attr, read_kind_attrs, row_blocks
from pillar_cli.errors import ArtifactError


def normalized(attrs: dict[str, Any]) -> dict[str, Any]:
    """The attributes as a reader gets them back (JSON types: numpy scalars as numbers, tuples as lists)."""
    return json.loads(json.dumps(attrs, default=json_default))


def _bytes(array: np.ndarray) -> memoryview:
    """The array's bytes in memory order, without a copy when it is contiguous (a zero-length axis included,
    which memoryview.cast refuses)."""
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8).data


def array_digest(name: str, array: np.ndarray | h5py.Dataset) -> str:
    """sha256 over an array's name, dtype, shape and bytes. An h5py dataset (of this artifact's file, or of
    another open file: features streamed to a scratch file) is read block by block, never whole; a thread
    hashes one block while the next is read (hashlib releases the GIL), so reading costs little on top of
    sha256."""
    digest = hashlib.sha256()
    if not isinstance(array, h5py.Dataset):
        array = np.ascontiguousarray(array)
        digest.update(f"{name}|{array.dtype.str}|{array.shape}".encode())
        digest.update(_bytes(array))
        return digest.hexdigest()
    with ThreadPoolExecutor(max_workers=1) as hasher:
        pending = hasher.submit(lambda: None)
        for header, block in _blocks(name, array):
            pending.result()  # the digest takes its updates in order
            digest.update(header)
            pending = hasher.submit(digest.update, _bytes(block))
        pending.result()
    return digest.hexdigest()


def array_digests(arrays: dict[str, np.ndarray | h5py.Dataset]) -> dict[str, str]:
    return {name: array_digest(name, arrays[name]) for name in sorted(arrays)}


def combined_hash(digests: dict[str, str], attrs: dict[str, Any]) -> str:
    """The content hash: sha256 over every array's digest and the sorted attributes. Stored beside the
    digests, it lets a reader check the whole file's content from them and rehash only the arrays it reads."""
    digest = hashlib.sha256(json.dumps(sorted(digests.items())).encode())
    digest.update(json.dumps(normalized(attrs), sort_keys=True).encode())
    return digest.hexdigest()


def content_hash(arrays: dict[str, np.ndarray | h5py.Dataset], attrs: dict[str, Any]) -> str:
    return combined_hash(array_digests(arrays), attrs)


def stored_digests(h5: h5py.File) -> dict[str, str] | None:
    """The array digests written with the file, None when they are missing or not a mapping of texts."""
    try:
        digests = json.loads(read_attr(h5, "array_digests") or "null")
    except ValueError:
        return None
    if not isinstance(digests, dict) or not all(isinstance(v, str) for v in digests.values()):
        return None
    return digests


def file_digests(h5: h5py.File) -> dict[str, str]:
    """Every array's digest, recomputed from an open artifact file."""
    return array_digests({name: h5[name] for name in dataset_names(h5)})


def dataset_names(h5: h5py.File) -> list[str]:
    names: list[str] = []
    h5.visititems(lambda name, node: names.append(name) if isinstance(node, h5py.Dataset) else None)
    return names


def _blocks(name: str, node: h5py.Dataset):
    """(the name-dtype-shape header before the first block, or b"", a C-contiguous block of the dataset's
    rows)."""
    if node.dtype.kind == "O" or node.ndim == 0:  # strings (read back as str arrays) and scalars: whole
        array = (
            np.asarray(node[()])
            if node.dtype.kind != "O"
            else np.array([v.decode() if isinstance(v, bytes) else v for v in node[()]], dtype=str)
        )
        yield f"{name}|{array.dtype.str}|{array.shape}".encode(), np.ascontiguousarray(array)
        return
    header = f"{name}|{node.dtype.str}|{node.shape}".encode()
    if node.shape[0] == 0:
        yield header, np.ascontiguousarray(node[()])
    for start, block in row_blocks(node):
        yield (header if start == 0 else b""), block


RECORD_ATTRS = (
    "pillar_kind",
    "schema_version",
    "pillar_version",
    "created_at",
    "command",
    "config",
    "inputs",
    "content_hash",
)


def record_hash(record: dict[str, Any]) -> str:
    """sha256 over the root attributes RECORD_ATTRS as stored (provenance as its JSON text)."""
    return hashlib.sha256(json.dumps([record.get(name) for name in RECORD_ATTRS]).encode()).hexdigest()


def stored_record(h5: h5py.File) -> dict[str, Any]:
    return {name: read_attr(h5, name) for name in RECORD_ATTRS}


def modified_part(h5: h5py.File, under: str | None = None) -> str | None:
    """'content' or 'provenance' when that part of the file no longer matches the hash stored with it, else
    None. The content is checked whole from the stored array digests (which datasets there are, the
    attributes), then the arrays under the group `under` (None: every array) are rehashed against their
    digests."""
    digests = stored_digests(h5)
    if (
        digests is None
        or set(dataset_names(h5)) != set(digests)
        or combined_hash(digests, read_kind_attrs(h5)) != read_attr(h5, "content_hash")
        or any(array_digest(name, h5[name]) != digests[name] for name in digests if _within(name, under))
    ):
        return "content"
    if record_hash(stored_record(h5)) != read_attr(h5, "record_hash"):
        return "provenance"
    return None


def _within(name: str, group: str | None) -> bool:
    return group is None or name.startswith(f"{group}/")


def verify(h5: h5py.File, path: str | Path, rehash: bool = True, under: str | None = None) -> None:
    """Refuse a file that holds links or (`rehash`: unless already verified) whose attributes, provenance or
    arrays (those under the group `under`, None: all) no longer match the hashes stored when it was
    written."""
    refuse_links(h5, path)
    part = modified_part(h5, under) if rehash else None
    if part is not None:
        hash_name = "content hash" if part == "content" else "record hash"
        raise ArtifactError(
            f"{path} was modified after it was written: its {part} no longer matches its {hash_name}",
            hint="recreate it with the stage that wrote it",
        )


def refuse_links(h5: h5py.File, path: str | Path) -> None:
    """Every object of an artifact is reached by exactly one hard link. A soft or external link, or a second
    hard link, would let one group pass for another (a link `splits/val2` to `splits/private`) while the
    content hash, which visits each object once and follows no link, stays the same."""

    def walk(group: h5py.Group, prefix: str) -> None:
        for name in group:
            where, link = f"{prefix}/{name}", group.get(name, getlink=True)
            if not isinstance(link, h5py.HardLink):
                kind = "a soft" if isinstance(link, h5py.SoftLink) else "an external"
                raise ArtifactError(
                    f"{path} holds {kind} link at {where}: a pillar artifact holds no links",
                    hint="recreate it with the stage that wrote it",
                )
            node = group[name]
            if (count := h5py.h5o.get_info(node.id).rc) != 1:
                raise ArtifactError(
                    f"{path} reaches {where} by {count} hard links: a pillar artifact holds no links",
                    hint="recreate it with the stage that wrote it",
                )
            if isinstance(node, h5py.Group):
                walk(node, where)

    walk(h5, "")
