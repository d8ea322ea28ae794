"""What the commands that read a dataset source (embed, predict) share: its KEY=VALUE parameters and how many
processes decode its rows."""

from __future__ import annotations

import os

import numpy as np

from pillar_cli.data import Dataset
from pillar_cli.errors import UsageError


def parse_params(items: list[str]) -> dict[str, str]:
    """--param KEY=VALUE items as a dict."""
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--param takes KEY=VALUE; got '{item}'")
        params[key.strip()] = value.strip()
    return params


def default_workers(dataset: Dataset) -> int:
    """One decoding worker per core where rows are read from files; none for arrays already in memory."""
    return 0 if isinstance(dataset.inputs, np.ndarray) else os.cpu_count() or 1
