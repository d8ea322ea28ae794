"""Provenance across artifacts: whether an artifact was derived from given content, and its chain of
ancestors, each checked against the file on disk now.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from pillar_cli.artifacts.core import SCHEMA_VERSION, Artifact, InputRef, Provenance, read_provenance
from pillar_cli.artifacts.crash_guard import known_or_passes_in_child
from pillar_cli.artifacts.embeddings import Split
from pillar_cli.artifacts.guarantee import guarantee_notes
from pillar_cli.artifacts.integrity import modified_part
from pillar_cli.artifacts.sharing import WITHHELD, sharing_note
from pillar_cli.errors import ArtifactError


def derived_from(artifact: Artifact, source: InputRef) -> bool:
    """Whether `artifact` was computed from the file content `source` refers to (by content hash)."""
    hashes = {ref.content_hash for ref in artifact.provenance.inputs} if artifact.provenance else set()
    return source.content_hash in hashes


def require_derived_from(artifact: Artifact, source: InputRef) -> None:
    """Fail unless `artifact` was computed from the file content `source` refers to (by content hash)."""
    if not derived_from(artifact, source):
        origins = (
            ", ".join(ref.path for ref in artifact.provenance.inputs) if artifact.provenance else "unknown"
        )
        raise ArtifactError(
            f"{artifact.path} was fitted on other data ({origins}) than {source.path}",
            hint="refit the projection on these embeddings' public split",
        )


def shared_rows(split: Split, artifact: Artifact, groups: tuple[str, ...]) -> int:
    """How many of the split's source rows are among the rows `artifact` was fitted or selected on (its
    `rows/<group>` arrays), or belong to a person who had rows there (its `persons/<group>`, where both name
    persons alike); rows of different sources (fingerprints) never count as shared."""
    fingerprint = artifact.attrs.get("source_fingerprint")
    if fingerprint is None or fingerprint != split.source_fingerprint:
        return 0
    shared = np.zeros(len(split.index), bool)
    used = [artifact.arrays[f"rows/{group}"] for group in groups if f"rows/{group}" in artifact.arrays]
    if used:
        shared |= np.isin(split.index, np.concatenate(used))
    people = [
        artifact.arrays[f"persons/{group}"] for group in groups if f"persons/{group}" in artifact.arrays
    ]
    if people and split.persons is not None and split.same_persons(artifact.attrs.get("persons")):
        shared |= np.isin(split.persons, np.concatenate(people))
    return int(shared.sum())


@dataclass(frozen=True)
class ChainLink:
    """One input in an artifact's ancestry: where it sits, and whether the file still holds what was
    consumed."""

    depth: int
    ref: InputRef
    # "ok", "changed" (another content hash), "modified" (edited since written; verify only), "missing",
    # "withheld" (a shareable file names the input without its hash: nothing to check it against)
    status: str
    command: list[str] | None


def provenance_chain(artifact: Artifact, max_depth: int = 8, verify: bool = False) -> list[ChainLink]:
    """The artifact's inputs, their inputs, and so on (depth first), each checked against its recorded hash;
    `verify` also recomputes each file's content hash from its arrays (reads every ancestor whole)."""
    links: list[ChainLink] = []

    def visit(provenance: Provenance, depth: int, seen: frozenset[str]) -> None:
        for ref in provenance.inputs:
            if not Path(ref.path).exists():
                links.append(ChainLink(depth, ref, "missing", None))
                continue
            try:
                _, parent = read_provenance(ref.path)
            except ArtifactError:
                links.append(ChainLink(depth, ref, "missing", None))
                continue
            status = (
                "withheld"
                if ref.content_hash == WITHHELD
                else "ok"
                if parent.content_hash == ref.content_hash
                else "changed"
            )
            if verify and status == "ok" and not content_matches(ref.path):
                status = "modified"
            links.append(ChainLink(depth, ref, status, parent.command))
            if depth < max_depth and ref.path not in seen:
                visit(parent, depth + 1, seen | {ref.path})

    if artifact.provenance is not None:
        visit(artifact.provenance, 1, frozenset({str(artifact.path)}))
    return links


def content_matches(path: str | Path) -> bool:
    """Whether the file's arrays, attributes and provenance still hash to the hashes stored in it (hashed in a
    forked child first, in case the file crashes libhdf5)."""
    if known_or_passes_in_child(path, _require_unmodified):
        return True
    with h5py.File(path, "r") as h5:
        return modified_part(h5) is None


def _require_unmodified(h5: h5py.File) -> None:
    if modified_part(h5) is not None:
        raise ArtifactError(f"{h5.filename} was modified")


def describe(artifact: Artifact, verify: bool = False) -> dict:
    """Everything `inspect` shows, as plain data: kind, provenance, the checked chain (`verify`: with every
    ancestor's content rehashed), attributes, datasets."""
    provenance = artifact.written
    datasets = {
        name: {"shape": list(array.shape), "dtype": str(array.dtype)}
        for name, array in artifact.arrays.items()
    }
    return {
        "path": str(artifact.path),
        "kind": artifact.kind,
        "schema_version": SCHEMA_VERSION,
        "pillar_version": provenance.pillar_version,
        "created_at": provenance.created_at,
        "content_hash": provenance.content_hash,
        "command": provenance.command,
        "config": provenance.config,
        "inputs": [ref.to_dict() for ref in provenance.inputs],
        "sharing": sharing_note(artifact.kind),
        "guarantee": guarantee_notes(artifact.attrs),
        "attrs": artifact.attrs,
        "datasets": datasets,
        "chain": [
            {"depth": link.depth, **link.ref.to_dict(), "status": link.status, "command": link.command}
            for link in provenance_chain(artifact, verify=verify)
        ],
        "verified": verify,
    }
