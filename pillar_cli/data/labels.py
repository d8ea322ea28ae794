"""Class labels as users hold them (strings, integers of any range, integral floats, booleans) turned into the
class indices 0..C-1 and class names every stage works with, or refused with one line.

The classes are the distinct label values, sorted; a class's name is its value as written, so `{7, 1000}` is two
classes named "7" and "1000", `{-1, 1}` the classes "-1" and "+1", and `cat`/`dog` keep their names.
"""

from __future__ import annotations

import numpy as np

from pillar_cli.errors import DataError


def encode_labels(origin: str, *parts: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Each part's labels as int64 class indices over the classes of all parts together, and the class names."""
    values = [_as_values(origin, np.asarray(part).ravel()) for part in parts]
    classes = np.unique(np.concatenate(values))
    if len(classes) == 0:
        raise DataError(f"{origin} holds no labels")
    return [np.searchsorted(classes, part).astype(np.int64) for part in values], _names(classes)


def _as_values(origin: str, labels: np.ndarray) -> np.ndarray:
    """Labels as one sortable kind: str for text, int64 for numbers (integral floats included)."""
    if labels.dtype.kind in "US" or (labels.dtype.kind == "O" and all(isinstance(v, (str, bytes)) for v in labels)):
        text = np.array([v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in labels], dtype=str)
        numbers = _numbers(text)
        return text if numbers is None else _as_values(origin, numbers)
    if labels.dtype.kind in "biu":
        return labels.astype(np.int64)
    if labels.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(labels) | (labels != np.round(labels)))
        if len(bad):
            raise DataError(f"labels of {origin} must be integers or strings: row {bad[0]} holds {labels[bad[0]]:g}")
        return labels.astype(np.int64)
    raise DataError(f"labels of {origin} must be integers or strings, not {labels.dtype}")


def _numbers(text: np.ndarray) -> np.ndarray | None:
    """Text labels that all read as numbers ("1", "-1", "2.0"), as floats; None when any is a name."""
    try:
        return text.astype(np.float64)
    except ValueError:
        return None


def _names(classes: np.ndarray) -> list[str]:
    if classes.dtype.kind == "U":
        return [str(name) for name in classes]
    if classes.tolist() == [-1, 1]:
        return ["-1", "+1"]
    return [str(int(value)) for value in classes]
