"""Class labels as users hold them (strings, integers of any range, integral floats, booleans) turned into the
class indices 0..C-1 and class names every stage works with, or refused with one line; and where the class set
comes from.

The class set a head predicts is declared — by the source (a dataset's fixed classes, an image folder's class
folders, a Hugging Face ClassLabel, an array file's `class_names`) or by the user (`embed --classes`) — never
read off the private labels: were it read off them, a label that only private rows hold would add a class, and
the head's shape would tell whether those rows were used. Reading it off the labels is a named choice
(`--classes-from-labels`) that every statement made from the file lists as not covered.

Read off the labels, the classes are the distinct label values, sorted; a class's name is its value as
written, so `{7, 1000}` is two classes named "7" and "1000", `{-1, 1}` the classes "-1" and "+1", and
`cat`/`dog` keep their names. Against declared names, a label names its class by its text (`cat`, `7`, `+1`
for "1"); integer labels are positions among the declared names where the names are not numbers.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from pillar_cli.errors import DataError, UsageError, param


class ClassSource(str, Enum):
    """Where a file's class set came from."""

    SOURCE = "source"  # declared by the source
    USER = "user"  # declared by the user (embed --classes)
    LABELS = "labels"  # read from the labels of every row (embed --classes-from-labels)


def encode_labels(origin: str, *parts: np.ndarray) -> tuple[list[np.ndarray], list[str]]:
    """Each part's labels as int64 class indices over the classes of all parts together, and the class
    names."""
    values = [_as_values(origin, np.asarray(part).ravel()) for part in parts]
    classes = np.unique(np.concatenate(values))
    if len(classes) == 0:
        raise DataError(f"{origin} holds no labels")
    return [np.searchsorted(classes, part).astype(np.int64) for part in values], _names(classes)


def _as_values(origin: str, labels: np.ndarray) -> np.ndarray:
    """Labels as one sortable kind: str for text, int64 for numbers (integral floats included)."""
    if labels.dtype.kind in "US" or (
        labels.dtype.kind == "O" and all(isinstance(v, (str, bytes)) for v in labels)
    ):
        text = np.array(
            [v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in labels], dtype=str
        )
        numbers = _numbers(text)
        return text if numbers is None else _as_values(origin, numbers)
    if labels.dtype.kind in "biu":
        return labels.astype(np.int64)
    if labels.dtype.kind == "f":
        bad = np.flatnonzero(~np.isfinite(labels) | (labels != np.round(labels)))
        if len(bad):
            raise DataError(
                f"labels of {origin} must be integers or strings: row {bad[0]} holds {labels[bad[0]]:g}"
            )
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


def encode_declared(origin: str, names: list[str], *parts: np.ndarray) -> list[np.ndarray]:
    """Each part's labels as int64 indices into the declared class `names`; a label that names none is one
    line."""
    values = [_as_values(origin, np.asarray(part).ravel()) for part in parts]
    numbered = _numbers(np.asarray(names, dtype=str)) is not None
    if values and all(part.dtype.kind == "i" for part in values) and not numbered:
        for part in values:
            if len(part) and (part.min() < 0 or part.max() >= len(names)):
                bad = int(part[(part < 0) | (part >= len(names))][0])
                raise DataError(
                    f"{origin}: label {bad} is no position among the {len(names)} declared classes"
                )
        return [part.astype(np.int64) for part in values]
    index = {_canonical(name): i for i, name in enumerate(names)}
    encoded = []
    for part in values:
        texts = [_canonical(value) for value in part.tolist()]
        unknown = next((text for text in texts if text not in index), None)
        if unknown is not None:
            raise DataError(
                f"{origin}: label '{unknown}' is not one of the {len(names)} declared classes "
                f"({_preview(names)})",
                hint=f"declare every class with {param('classes')}, or correct the label",
            )
        encoded.append(np.asarray([index[text] for text in texts], dtype=np.int64))
    return encoded


def declared_names(path: object, arrays: dict[str, np.ndarray]) -> list[str] | None:
    """The classes an array file declares (a `class_names` array of two or more distinct texts), if it
    does."""
    if "class_names" not in arrays:
        return None
    names = arrays["class_names"]
    texts = [
        v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v) for v in np.asarray(names).ravel()
    ]
    if np.ndim(names) != 1 or len(texts) < 2 or len(set(texts)) != len(texts):
        raise DataError(f"{path}: 'class_names' must list two or more distinct class names")
    return texts


def parse_class_names(text: str) -> list[str]:
    """`--classes`: comma-separated names, or a file of one name a line; two or more distinct names."""
    from pathlib import Path

    given = Path(text)
    if "," not in text and given.is_file():
        try:
            lines = given.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as err:
            raise UsageError(
                f"{param('classes')} {text} is not UTF-8 text (byte {err.start} cannot be read): give a file "
                "of one class name a line"
            ) from None
        names = [line.strip() for line in lines if line.strip()]
    else:
        names = [name.strip() for name in text.split(",") if name.strip()]
    if len(names) < 2 or len({_canonical(name) for name in names}) != len(names):
        raise UsageError(
            f"{param('classes')} needs two or more distinct class names (comma-separated, or a file of "
            f"one a line); got {text!r}"
        )
    return names


def _canonical(value: object) -> str:
    """A label or class name as compared: numbers by value ("+1", "1", "1.0" alike), text as written."""
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def _preview(names: list[str], limit: int = 6) -> str:
    return ", ".join(names[:limit]) + (f", … ({len(names)} in all)" if len(names) > limit else "")
