"""Result tables as CSV and Markdown: one row per (method, k, ε), metrics as mean ± sample std (ddof = 1) over
seeds."""

from __future__ import annotations

import csv
import io
import math

REPORT_COLUMNS = [
    "method",
    "k",
    "epsilon",
    "epsilon_spent",
    "seeds",
    "accuracy_mean",
    "accuracy_std",
    "balanced_accuracy_mean",
    "macro_f1_mean",
    "roc_auc_mean",
    "val_accuracy",
    "lr",
    "steps",
    "batch_size",
]


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return str(value)


def rows_to_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(REPORT_COLUMNS)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in REPORT_COLUMNS])
    return buffer.getvalue()


def mean_and_std(row: dict, metric: str) -> str:
    """`mean ± sample std` over seeds, or the mean alone for one seed."""
    std = row[f"{metric}_std"]
    return f"{row[f'{metric}_mean']:.4f}" + ("" if std is None else f" ± {std:.4f}")


def rows_to_markdown(rows: list[dict], title: str, notes: list[str]) -> str:
    """A self-contained report: title, the settings that qualify the numbers, and the table."""
    lines = [
        f"# {title}",
        "",
        *[f"- {note}" for note in notes],
        "",
        "| method | k | ε | accuracy | balanced acc. | macro-F1 | ROC-AUC | seeds | ε spent |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        auc = "" if row.get("roc_auc_mean") is None else f"{row['roc_auc_mean']:.4f}"
        lines.append(
            f"| {row['method']} | {row['k']} | {_cell(row['epsilon'])} | {mean_and_std(row, 'accuracy')} | "
            f"{row['balanced_accuracy_mean']:.4f} | {row['macro_f1_mean']:.4f} | {auc} | {row['seeds']} | "
            f"{_cell(row['epsilon_spent'])} |"
        )
    return "\n".join(lines) + "\n"


def markdown_table(title: str, notes: list[str], rows: list[dict], columns: list[str]) -> str:
    """Any table of strings as a self-contained Markdown report: title, qualifying notes, the table."""
    lines = [
        f"# {title}",
        "",
        *[f"- {note}" for note in notes],
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    lines += ["| " + " | ".join(_cell(row.get(column)) for column in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"
