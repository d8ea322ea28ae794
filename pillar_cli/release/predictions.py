"""Predictions per input row, written as CSV, JSON Lines or Parquet (chosen by the output's suffix), or as CSV to
standard output (the output `-`).

One row per input: its id in the source (`row`), the predicted class name, and the probability of each class
(`p_<class name>` columns; a `probabilities` object in JSON Lines).
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from pillar_cli.artifacts.files import replacing
from pillar_cli.errors import UsageError

PREDICTION_FORMATS = (".csv", ".jsonl", ".parquet")
STDOUT = Path("-")  # predictions as CSV on standard output


def prediction_format(path: Path) -> str:
    """The format of an output path, refused before any work when unknown or unavailable."""
    if path == STDOUT:
        return ".csv"
    suffix = path.suffix.lower()
    if suffix not in PREDICTION_FORMATS:
        raise UsageError(f"cannot write predictions as '{suffix or path.name}': name the output "
                         f"{', '.join('*' + s for s in PREDICTION_FORMATS)}")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UsageError("writing Parquet needs pyarrow (pip install pyarrow); or name the output *.csv or "
                             "*.jsonl") from None
    return suffix


def write_predictions(path: Path, rows: np.ndarray, class_names: list[str], probabilities: np.ndarray,
                      force: bool = False) -> None:
    """Atomically write one prediction per row (an existing file only with `force`)."""
    suffix = prediction_format(path)
    predicted = [class_names[i] for i in probabilities.argmax(axis=1)]
    if path == STDOUT:
        return _csv(sys.stdout, rows, predicted, class_names, probabilities, "\n")
    with replacing(path, force) as tmp:
        if suffix == ".csv":
            with open(tmp, "w", newline="") as handle:
                _csv(handle, rows, predicted, class_names, probabilities)
        elif suffix == ".jsonl":
            with open(tmp, "w") as handle:
                for row, label, p in zip(rows.tolist(), predicted, probabilities.tolist()):
                    handle.write(json.dumps({"row": row, "predicted": label,
                                             "probabilities": dict(zip(class_names, p))}) + "\n")
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            columns = {"row": rows, "predicted": predicted,
                       **{f"p_{name}": probabilities[:, i] for i, name in enumerate(class_names)}}
            pq.write_table(pa.table(columns), tmp)


def _csv(handle: TextIO, rows: np.ndarray, predicted: list[str], class_names: list[str],
         probabilities: np.ndarray, lineterminator: str = "\r\n") -> None:
    writer = csv.writer(handle, lineterminator=lineterminator)
    writer.writerow(["row", "predicted", *(f"p_{name}" for name in class_names)])
    for row, label, p in zip(rows.tolist(), predicted, probabilities.tolist()):
        writer.writerow([row, label, *(repr(float(v)) for v in p)])
