"""An artifact in memory, and what it records of where it came from: the value every stage builds and reads
(artifacts/core.py writes and reads it as HDF5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pillar_cli.errors import ArtifactError


@dataclass(frozen=True)
class InputRef:
    """An input a stage consumed: which file (and split), of which kind, with which content hash."""

    path: str
    kind: str
    content_hash: str
    split: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "content_hash": self.content_hash, "split": self.split}


@dataclass(frozen=True)
class Provenance:
    """Who made an artifact, from what: filled in by `write`, read back by `read`."""

    pillar_version: str
    created_at: str
    command: list[str]
    config: dict[str, Any]
    inputs: list[InputRef]
    content_hash: str


@dataclass
class Artifact:
    """An artifact in memory: arrays by slash-separated name, kind-specific attributes, provenance."""

    kind: str
    arrays: dict[str, np.ndarray]
    attrs: dict[str, Any] = field(default_factory=dict)
    path: str | None = None
    provenance: Provenance | None = None

    @property
    def written(self) -> Provenance:
        """Its provenance, which writing or reading the file gives it."""
        if self.provenance is None:
            raise ArtifactError(f"{self.kind} artifact has not been written yet: it has no provenance")
        return self.provenance

    def ref(self, split: str | None = None) -> InputRef:
        """The reference a downstream stage records when it consumes this artifact."""
        if self.path is None or self.provenance is None:
            raise ArtifactError(f"{self.kind} artifact has not been written yet; it cannot be an input")
        return InputRef(self.path, self.kind, self.provenance.content_hash, split)

    def array(self, name: str) -> np.ndarray:
        if name not in self.arrays:
            raise ArtifactError(
                f"{self.path}: {self.kind} artifact has no dataset '/{name}'",
                hint="the file may come from another tool or be damaged; recreate it",
            )
        return self.arrays[name]
