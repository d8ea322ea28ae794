"""The embeddings artifact: per split, `/splits/<name>/features` (N × D float32), `/labels` (absent for the
unlabelled public split) and `/index` (row ids in the source); read one split at a time as `FILE:SPLIT`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pillar_cli.artifacts.core import Artifact, InputRef, read
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.stored_rows import StoredRows, all_finite, non_finite_rows
from pillar_cli.errors import ArtifactError, DataError, PrivacyError, UsageError, param
from pillar_cli.privacy.premises import Premises
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import keyed_draws


def embeddings_artifact(
    splits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]],
    attrs: dict[str, Any],
) -> Artifact:
    """An embeddings artifact from (features, row ids, labels or None, persons or None) per split name."""
    arrays: dict[str, np.ndarray] = {}
    for name, (features, index, labels, persons) in splits.items():
        arrays[f"splits/{name}/features"] = features
        arrays[f"splits/{name}/index"] = index
        if labels is not None:
            arrays[f"splits/{name}/labels"] = labels
        if persons is not None:
            arrays[f"splits/{name}/persons"] = persons
    return Artifact("embeddings", arrays, {**attrs, "splits": list(splits)})


def parse_ref(text: str, default_split: str | None = None) -> tuple[str, str | None]:
    """'emb.h5:private' → ('emb.h5', 'private'); a bare path takes `default_split`."""
    path, sep, split = text.rpartition(":")
    if sep and path and split and "/" not in split:
        return path, split
    return text, default_split


@dataclass(frozen=True)
class Split:
    """One split of an embeddings artifact: features, labels (None when unlabelled), source row ids and, where
    the source names them, each row's person (None: each row is its own person)."""

    name: str
    features: np.ndarray | StoredRows  # StoredRows: left in the file (read_split's on_disk)
    labels: np.ndarray | None
    index: np.ndarray
    ref: InputRef
    attrs: dict[str, Any]
    persons: np.ndarray | None = None

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    @property
    def class_names(self) -> list[str]:
        return list(self.attrs.get("class_names") or [])

    @property
    def premises(self) -> Premises:
        """How the file fixed its class set, splits and rows (privacy/premises.py)."""
        return Premises.from_attrs(self.attrs.get("premises"))

    @property
    def carried(self) -> dict[str, Any]:
        """What a model or classifier trained on this split carries of it: how its features were made, its
        class names and the premises they rest on."""
        return {
            **self.recipe.to_attrs(),
            "class_names": self.class_names,
            "premises": self.premises.to_attrs(),
        }

    @property
    def drawn_share(self) -> float | None:
        """The share of the source's train part the split recipe draws into this split (its public_fraction
        for the public split; None for another split or a file that does not record it). Public, unlike a
        share counted over the file's rows, which moves with every private record deleted from the source."""
        return self.attrs.get("public_fraction") if self.name == "public" else None

    @property
    def source(self) -> str | None:
        """The source it was embedded from, in words (e.g. 'mnist', a folder)."""
        return self.attrs.get("source")

    @property
    def backbone(self) -> str | None:
        return self.attrs.get("backbone")

    @property
    def source_fingerprint(self) -> str | None:
        """What names the source's rows: two files with the same fingerprint number the same rows alike."""
        return self.attrs.get("source_fingerprint")

    @property
    def role(self) -> str:
        """What the split is for (public, private, val, test), as the embeddings recorded it."""
        return (self.attrs.get("split_roles") or {}).get(self.name, "role not recorded")

    @property
    def recipe(self) -> FeatureRecipe:
        """How its features were made: what a classifier trained on them records, and what new features must
        have been made by to be read by it."""
        return FeatureRecipe.from_attrs(self.attrs)

    def same_source(self, other: Split) -> bool:
        """Both splits number the rows of one source alike (their row ids can be compared)."""
        return self.source_fingerprint == other.source_fingerprint

    @property
    def units(self) -> Units:
        """Each row's unit of privacy: the persons the file records (named by their source), else each row its
        own."""
        grouping = self.grouping or {}
        return Units.of(self.persons, len(self.features), grouping.get("source"))

    @property
    def grouping(self) -> dict[str, str] | None:
        """Where the persons came from and what names the grouping ({"source", "fingerprint"}); None: a person
        a row."""
        return self.attrs.get("persons") if self.persons is not None else None

    def same_persons(self, other_grouping: dict | None) -> bool:
        """This split and a file recording `other_grouping` number one source's persons alike."""
        return (
            self.grouping is not None
            and other_grouping is not None
            and self.grouping.get("fingerprint") == other_grouping.get("fingerprint")
        )

    def rows_sharing_persons(self, other: Split) -> int:
        """Rows of this split whose person has rows in `other` too (same source and grouping; 0 otherwise)."""
        if not (self.same_source(other) and self.same_persons(other.grouping)):
            return 0
        if self.persons is None or other.persons is None:
            return 0
        return int(np.isin(self.persons, other.persons).sum())

    def subsample(self, fraction: float, option: str = "private_fraction") -> Split:
        """The rows whose keyed draw (seed 0; randomness.keyed_draws) lies below `fraction`, each keyed by the
        sha256 of its features and its place among the rows equal to it: a row is kept or not by itself, so
        deleting one keeps or drops no other row but, at most, one equal to it; the whole split when fraction
        is 1 (Figure 7 of the paper: private rows; Table 2(b): public rows). `option` names the command-line
        option that asked for it."""
        if not 0 < fraction <= 1:
            raise UsageError(f"{param(option)} must be in (0, 1] (got {fraction})")
        if fraction == 1.0:
            return self
        rows = kept_rows(self.features, fraction, option, self.name)
        labels = None if self.labels is None else self.labels[rows]
        return replace(
            self,
            features=self.features[rows],
            labels=labels,
            index=self.index[rows],
            persons=None if self.persons is None else self.persons[rows],
        )

    def joined(self, other: Split) -> Split:
        """This split's rows followed by another labelled split's of the same file (the private rows and the
        val rows that train the heads together); a row in both would be one person counted twice, so they must
        be disjoint."""
        shared = np.intersect1d(self.index, other.index)
        if len(shared):
            raise PrivacyError(
                f"{self.ref.path}: {len(shared)} rows of the {other.name} split also appear in the "
                f"{self.name} split: trained on together, one person would count twice",
                hint="re-embed: the splits of one source must be disjoint",
            )
        if (self.persons is None) != (other.persons is None):
            raise ArtifactError(
                f"{self.ref.path}: the {self.name} and {other.name} splits do not both name their "
                "rows' persons",
                hint="the file may come from another tool or be damaged; recreate it",
            )
        if self.features.shape[1:] != other.features.shape[1:]:
            raise ArtifactError(
                f"{self.ref.path}: the {self.name} and {other.name} splits hold features of different "
                f"dimensions ({self.features.shape[1:]} and {other.features.shape[1:]})",
                hint="the file may come from another tool or be damaged; recreate it",
            )
        if self.labels is None or other.labels is None:
            raise DataError(
                f"{self.ref.path}: the {other.name if other.labels is None else self.name} split has no "
                "labels to train on"
            )
        return replace(
            self,
            name=f"{self.name}+{other.name}",
            features=_rows_joined(self.features, other.features),
            labels=np.concatenate([self.labels, other.labels]),
            index=np.concatenate([self.index, other.index]),
            persons=None if self.persons is None else np.concatenate([self.persons, other.persons]),
        )


def kept_rows(features: np.ndarray | StoredRows, fraction: float, option: str, name: str) -> np.ndarray:
    """The positions of the rows whose keyed draw (seed 0) lies below `fraction`, each keyed by the sha256 of
    its features and its place among the rows equal to it (Split.subsample); at least two."""
    seen: dict[bytes, int] = {}
    keys = []
    for row in features:
        digest = hashlib.sha256(np.ascontiguousarray(row).tobytes()).digest()
        seen[digest] = seen.get(digest, -1) + 1
        keys.append(digest + seen[digest].to_bytes(8, "little"))
    rows = np.flatnonzero(keyed_draws(keys, 0, "fraction") < fraction)
    if len(rows) < 2:
        raise UsageError(f"{param(option)} {fraction} leaves {len(rows)} {name} rows")
    return rows


def _rows_joined(rows: np.ndarray | StoredRows, more: np.ndarray | StoredRows) -> np.ndarray | StoredRows:
    """`rows` then `more`: left on disk where both are rows of one file, else in memory."""
    on_disk = rows.joined(more) if isinstance(rows, StoredRows) and isinstance(more, StoredRows) else None
    return on_disk if on_disk is not None else np.concatenate([np.asarray(rows), np.asarray(more)])


def read_split(text: str, default_split: str | None = None, *, on_disk: bool = False) -> Split:
    """Read one split ('emb.h5:private') of an embeddings artifact, checking its features are finite a block
    at a time. `on_disk`: its features stay in the file, read a block at a time where they are used
    (artifacts/stored_rows.py): a stage that projects them holds n × k rows, not n × d."""
    path, split = parse_ref(text, default_split)
    if split is None:
        raise ArtifactError(f"no split named in '{text}'", hint="write FILE:SPLIT, e.g. emb.h5:private")
    artifact = read(
        path,
        "embeddings",
        under=f"splits/{split}",
        on_disk=frozenset({f"splits/{split}/features"}) if on_disk else frozenset(),
    )
    recorded = artifact.attrs.get("splits")  # guards go by split names: only the names written (hashed) count
    if recorded is not None and split not in recorded:
        raise ArtifactError(
            f"{path} has a group 'splits/{split}' that is not one of its splits ({', '.join(recorded)})",
            hint="recreate it with pillar embed",
        )
    prefix = f"splits/{split}"
    features = artifact.array(f"{prefix}/features")
    if not all_finite(features):
        bad = non_finite_rows(features)
        raise ArtifactError(
            f"{path}:{split} has {bad} rows with NaN or Inf features",
            hint="fix the embedding run or drop those rows before training",
        )
    labels, index = artifact.arrays.get(f"{prefix}/labels"), artifact.array(f"{prefix}/index")
    persons = artifact.arrays.get(f"{prefix}/persons")
    if labels is not None and len(labels) != len(features):
        raise ArtifactError(f"{path}:{split} has {len(labels)} labels for {len(features)} feature rows")
    if len(index) != len(features):
        raise ArtifactError(f"{path}:{split} has {len(index)} row ids for {len(features)} feature rows")
    classes = len(artifact.attrs["class_names"])
    if labels is not None and len(labels) and (labels.min() < 0 or labels.max() >= classes):
        raise ArtifactError(
            f"{path}:{split} has labels outside 0..{classes - 1} (its {classes} class names)",
            hint="recreate it with pillar embed",
        )
    if persons is not None and len(persons) != len(features):
        raise ArtifactError(f"{path}:{split} has {len(persons)} persons for {len(features)} feature rows")
    return Split(
        split,
        features,
        labels,
        artifact.array(f"{prefix}/index"),
        artifact.ref(split),
        artifact.attrs,
        persons,
    )
