"""The metrics a result table reports, against their definitions on real digits predictions, and the tables
they are written in (CSV read back, Markdown cells)."""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli.reporting.metrics import classification_metrics
from pillar_cli.reporting.tables import REPORT_COLUMNS, mean_and_std, rows_to_csv, rows_to_markdown


@pytest.fixture(scope="module")
def predicted():
    """A weak classifier's predictions on held-out digits (every class present, several confused)."""
    x, y = load_digits(return_X_y=True)
    x = x[:, :16]  # the top two rows of pixels: a nearest-centroid head on them confuses several classes
    centroids = np.stack([x[:200][y[:200] == c].mean(axis=0) for c in range(10)])
    distances = ((x[1000:, None, :] - centroids[None]) ** 2).sum(axis=2)
    return y[1000:], distances.argmin(axis=1)


def test_the_metrics_are_their_definitions(predicted):
    labels, predictions = predicted
    metrics = classification_metrics(labels, predictions, 10)
    confusion = np.zeros((10, 10), dtype=int)
    np.add.at(confusion, (labels, predictions), 1)
    recall = np.diag(confusion) / confusion.sum(axis=1)
    precision = np.diag(confusion) / np.maximum(confusion.sum(axis=0), 1)
    f1 = np.where(precision + recall > 0, 2 * precision * recall / np.maximum(precision + recall, 1e-300), 0)
    assert metrics["confusion"] == confusion.tolist()
    assert metrics["accuracy"] == pytest.approx(np.mean(labels == predictions))
    assert metrics["per_class_accuracy"] == pytest.approx(recall.tolist())
    assert metrics["balanced_accuracy"] == pytest.approx(recall.mean())
    assert metrics["macro_f1"] == pytest.approx(f1.mean())
    assert metrics["roc_auc"] is None and 0.3 < metrics["accuracy"] < 0.95  # a weak head: numbers that differ


def test_a_class_the_split_lacks_has_no_accuracy_and_roc_auc_is_the_rank_statistic():
    import warnings

    labels, predictions = np.array([0, 0, 1, 1, 1]), np.array([0, 1, 1, 1, 0])
    metrics = classification_metrics(labels, predictions, 3, binary_score=np.array([-2.0, 0.5, 1.0, 3.0, -1]))
    with (
        warnings.catch_warnings()
    ):  # a class predicted that the split lacks: no library warning reaches the user
        warnings.simplefilter("error")
        lacking = classification_metrics(labels, np.array([0, 2, 1, 1, 0]), 3)
    assert lacking["per_class_accuracy"] == [0.5, pytest.approx(2 / 3), None]
    assert metrics["per_class_accuracy"] == [0.5, pytest.approx(2 / 3), None]
    # the share of (positive, negative) pairs the score orders rightly: 5 of 6
    assert metrics["roc_auc"] == pytest.approx(5 / 6)


ROWS = [
    {"method": "pillar", "k": 20, "epsilon": 1.0, "epsilon_spent": 0.99871, "seeds": 3,
     "accuracy_mean": 0.91234, "accuracy_std": 0.01, "balanced_accuracy_mean": 0.9, "macro_f1_mean": 0.89,
     "roc_auc_mean": None, "val_accuracy": 0.9, "lr": 0.5, "steps": 200, "batch_size": 256},
    {"method": "dpsgd", "k": "full", "epsilon": math.inf, "epsilon_spent": math.inf, "seeds": 1,
     "accuracy_mean": 0.95, "accuracy_std": None, "balanced_accuracy_mean": 0.94, "macro_f1_mean": 0.93,
     "roc_auc_mean": 0.99, "val_accuracy": None, "lr": 0.1, "steps": 500, "batch_size": None},
]  # fmt: skip


def test_the_csv_reads_back_with_every_column_and_no_value_lost():
    table = list(csv.DictReader(io.StringIO(rows_to_csv(ROWS))))
    assert list(table[0]) == REPORT_COLUMNS
    assert table[0]["epsilon_spent"] == "0.99871" and table[0]["roc_auc_mean"] == ""
    assert table[1]["epsilon"] == "inf" and table[1]["accuracy_std"] == "" and table[1]["batch_size"] == ""
    assert [float(row["accuracy_mean"]) for row in table] == [0.91234, 0.95]


def test_markdown_cells_give_the_std_only_over_several_seeds():
    assert mean_and_std(ROWS[0], "accuracy") == "0.9123 ± 0.0100"
    assert mean_and_std(ROWS[1], "accuracy") == "0.9500"
    lines = rows_to_markdown(ROWS, "digits", ["δ = 1e-05"]).splitlines()
    assert lines[:3] == ["# digits", "", "- δ = 1e-05"]
    assert lines[-2] == "| pillar | 20 | 1 | 0.9123 ± 0.0100 | 0.9000 | 0.8900 |  | 3 | 0.99871 |"
    assert lines[-1] == "| dpsgd | full | inf | 0.9500 | 0.9400 | 0.9300 | 0.9900 | 1 | inf |"


def test_the_pages_accuracy_interval_is_wilsons():
    """Against scipy's Wilson score interval of k successes in n trials."""
    from scipy.stats import binomtest

    from pillar_cli.reporting.page import wilson_interval

    for successes, rows in ((912, 1000), (48, 50), (0, 30), (30, 30), (7, 9)):
        reference = binomtest(successes, rows).proportion_ci(0.95, method="wilson")
        assert wilson_interval(successes / rows, rows) == pytest.approx(
            (reference.low, reference.high), abs=1e-12
        )
