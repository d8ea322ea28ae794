"""A split read from a file (`pillar_cli.read_split`) given to the Python API where arrays are expected.

Its `features` alone would drop the persons the file records, and a fit on them would protect each row where
the data holder's unit is the person: a split's features, labels and persons travel together instead."""

from __future__ import annotations

from typing import Any

from pillar_cli.artifacts.embeddings import Split
from pillar_cli.errors import UsageError, param

ROW_UNIT = "row"


def given_rows(
    X: Any, y: Any, groups: Any, privacy_unit: str = "auto", labelled: bool = True
) -> tuple[Any, Any, Any]:
    """(features, labels, groups) from arrays as given, or from a Split: its labels where `y` is None and its
    persons as the groups, unless `privacy_unit` is "row" (each row its own unit, asked for by name)."""
    if not isinstance(X, Split):
        return X, y, groups
    if y is not None or groups is not None:
        given = param("y") if y is not None else param("groups")
        raise UsageError(
            f"{given} given with a split ({X.name}): the split brings its own labels and persons",
            hint="pass the split alone, or its arrays (split.features, split.labels, split.persons)",
        )
    if labelled and X.labels is None:
        raise UsageError(f"the split {X.name} holds no labels: train on a labelled split (private, val)")
    return X.features, X.labels, None if privacy_unit == ROW_UNIT else X.persons
