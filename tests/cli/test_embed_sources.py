"""embed --limit / --fraction: subsets of each part of a source, each row kept by its own keyed draw."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.data import SourceOptions, load_source
from pillar_cli.data.keys import SUBSAMPLE, keyed_draws

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_limit_and_fraction_subsample_each_part(pillar, tmp_path):
    pillar("embed", "--source", "digits", "--limit", "300", "-o", tmp_path / "a.h5")
    pillar("embed", "--source", "digits", "--fraction", "0.5", "-o", tmp_path / "b.h5")
    from pillar_cli import artifacts

    total = {
        name: sum(
            len(artifacts.read_split(f"{tmp_path / name}:{s}").index)
            for s in ("private", "public", "val", "test")
        )
        for name in ("a.h5", "b.h5")
    }
    # each row's own draw
    kept = keyed_draws(load_source("digits", SourceOptions()).row_keys(), 0, SUBSAMPLE) < 0.5
    assert total == {"a.h5": 300, "b.h5": int(kept.sum())} and abs(kept.sum() - 1797 / 2) < 4 * np.sqrt(
        1797 / 4
    )
    assert [artifacts.read_split(f"{tmp_path / name}:test").premises.kept for name in ("a.h5", "b.h5")] == [
        "limit",
        "fraction",
    ]
