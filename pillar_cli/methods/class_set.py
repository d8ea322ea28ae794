"""The class set of a fit from Python: declared (`classes=`, or the class names of a split read from a file),
or read off the labels — which the statement then lists as not covered, since a label only one private row
holds adds a class that the head's shape shows."""

from __future__ import annotations

from typing import Any

import numpy as np

from pillar_cli.artifacts.embeddings import Split
from pillar_cli.errors import DataError, UsageError, param
from pillar_cli.privacy.premises import GIVEN, LABELS, USER, Premises


def class_set(y: np.ndarray, declared: Any, split: Split | None) -> tuple[np.ndarray, np.ndarray, Premises]:
    """(the classes, each row's index among them, the premises a statement states of them). A split brings
    its file's declared classes and premises (its labels index its class names); else `declared`, else the
    labels' distinct values."""
    if declared is None and split is not None and split.class_names:
        declared = np.arange(split.num_classes)
    premises = split.premises if split is not None else Premises(classes=LABELS, splits=GIVEN)
    if declared is None:
        classes, labels = np.unique(y, return_inverse=True)
        return classes, labels, premises
    classes = np.asarray(declared)
    if classes.ndim != 1 or len(classes) < 2 or len(np.unique(classes)) != len(classes):
        raise UsageError(f"{param('classes')} must name at least two classes, each once")
    position = {value: index for index, value in enumerate(classes.tolist())}
    unknown = sorted({value for value in np.asarray(y).tolist() if value not in position}, key=str)
    if unknown:
        raise DataError(
            f"{len(unknown)} label(s) of y are not among {param('classes')} (e.g. {unknown[0]!r})",
            hint="declare every class, or leave classes None to read them off the labels (not covered by ε)",
        )
    labels = np.array([position[value] for value in np.asarray(y).tolist()], dtype=np.int64)
    return classes, labels, premises if split is not None else Premises(classes=USER, splits=GIVEN)
