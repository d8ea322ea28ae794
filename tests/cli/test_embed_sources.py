"""embed --limit / --fraction: seeded subsets of each part of a source."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_limit_and_fraction_subsample_each_part(pillar, tmp_path):
    pillar("embed", "--source", "digits", "--limit", "300", "-o", tmp_path / "a.h5")
    pillar("embed", "--source", "digits", "--fraction", "0.5", "-o", tmp_path / "b.h5")
    from pillar_cli import artifacts

    total = {name: sum(len(artifacts.read_split(f"{tmp_path / name}:{s}").index)
                       for s in ("private", "public", "val", "test")) for name in ("a.h5", "b.h5")}
    assert total == {"a.h5": 300, "b.h5": 898}
