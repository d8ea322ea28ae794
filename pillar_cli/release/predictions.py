"""Predictions per input row, written as CSV, JSON Lines or Parquet (chosen by the output's suffix), or as CSV
to standard output (the output `-`).

One row per input: its id in the source (`row`), the predicted class name, and the probability of each class
(`p_<class name>` columns; a `probabilities` object in JSON Lines).
"""

from __future__ import annotations

import csv
import errno
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

import numpy as np

from pillar_cli.artifacts.files import STDOUT, replacing
from pillar_cli.errors import UsageError

PREDICTION_FORMATS = (".csv", ".jsonl", ".parquet")
# blocks of (row ids, class names, probabilities)
Predicted = Iterator[tuple[np.ndarray, list[str], np.ndarray]]


def prediction_format(path: Path) -> str:
    """The format of an output path, refused before any work when unknown or unavailable."""
    if path == STDOUT:
        return ".csv"
    suffix = path.suffix.lower()
    if suffix not in PREDICTION_FORMATS:
        raise UsageError(
            f"cannot write predictions as '{suffix or path.name}': name the output "
            f"{', '.join('*' + s for s in PREDICTION_FORMATS)}"
        )
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError(
                "writing Parquet needs pyarrow (pip install pyarrow); or name the output *.csv or *.jsonl"
            ) from None
    return suffix


def write_predictions(
    path: Path, blocks: Iterable[tuple[np.ndarray, np.ndarray]], class_names: list[str], force: bool = False
) -> np.ndarray:
    """Atomically write one prediction per row (an existing file only with `force`), from blocks of (row ids,
    class probabilities) written as they come: no block is held after it is written. Returns how many rows
    each class was predicted for."""
    suffix = prediction_format(path)
    counts = np.zeros(len(class_names), dtype=np.int64)

    def predicted() -> Predicted:
        for rows, probabilities in blocks:
            chosen = probabilities.argmax(axis=1)
            counts[:] += np.bincount(chosen, minlength=len(class_names))
            yield rows, [class_names[i] for i in chosen], probabilities

    if path == STDOUT:
        if sys.stdout is None:  # the shell closed it (>&-): nowhere to write
            raise OSError(errno.EBADF, "standard output is closed: nowhere to write the predictions")
        _csv(sys.stdout, predicted(), class_names)
        return counts
    with replacing(path, force) as tmp:
        if suffix == ".parquet":
            _parquet(tmp, predicted(), class_names)
        else:
            with open(tmp, "w", newline="") as handle:
                (_csv if suffix == ".csv" else _jsonl)(handle, predicted(), class_names)
    return counts


def _csv(handle: TextIO, blocks: Predicted, class_names: list[str]) -> None:
    """One line a row, ended by LF whether written to a file or standard output (as the tables are)."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(["row", "predicted", *(f"p_{name}" for name in class_names)])
    for rows, predicted, probabilities in blocks:
        for row, label, p in zip(rows.tolist(), predicted, probabilities.tolist()):
            writer.writerow([row, label, *(repr(float(v)) for v in p)])


def _jsonl(handle: TextIO, blocks: Predicted, class_names: list[str]) -> None:
    for rows, predicted, probabilities in blocks:
        for row, label, p in zip(rows.tolist(), predicted, probabilities.tolist()):
            handle.write(
                json.dumps({"row": row, "predicted": label, "probabilities": dict(zip(class_names, p))})
                + "\n"
            )


def _parquet(path: Path, blocks: Predicted, class_names: list[str]) -> None:
    """One row group a block, every block in the first block's schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def table(rows: np.ndarray, predicted: list[str], probabilities: np.ndarray) -> pa.Table:
        return pa.table(
            {
                "row": rows,
                "predicted": predicted,
                **{f"p_{name}": probabilities[:, i] for i, name in enumerate(class_names)},
            }
        )

    writer = None
    try:
        for block in blocks:
            written = table(*block)
            writer = writer or pq.ParquetWriter(path, written.schema)
            writer.write_table(written.cast(writer.schema))
        if writer is None:  # no rows: the columns alone
            pq.write_table(table(np.zeros(0, dtype=np.int64), [], np.zeros((0, len(class_names)))), path)
    finally:
        if writer is not None:
            writer.close()
