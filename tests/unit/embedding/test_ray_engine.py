"""The Ray engine's driver side: features written at their rows' positions whatever order batches arrive in, a row
that arrives twice (a task Ray ran again) kept once, and a run that leaves a row out or carries a read error
refused."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.embedding.extraction import FeatureStore
from pillar_cli.embedding.ray_engine import write_batches
from pillar_cli.errors import DataError

SIZES = {"private": 5, "public": 3, "test": 4}  # row numbers 0-4, 5-7 and 8-11


def batch(ids, error=""):
    ids = np.asarray(ids, dtype=np.int64)
    return {"id": ids, "features": np.stack([ids * 10.0, -ids]).T.astype(np.float32),
            "error": np.full(len(ids), error, dtype=object)}


@pytest.fixture
def store(tmp_path):
    store = FeatureStore(tmp_path / "out.h5.partial", {}, SIZES, 2, resume=False)
    yield store
    store.close()


def test_rows_land_at_their_positions_in_any_order_and_a_repeated_row_keeps_its_first_features(store):
    repeated = batch([3, 4, 5])
    repeated["features"][:] = -1  # a second run of rows 3-5 (say, with other float rounding) is not written
    heard = []
    write_batches([batch([9, 8, 10, 11]), batch([5, 6, 7, 0, 1, 2, 3, 4]), repeated], store, SIZES, heard.append)
    assert heard == [4, 8, 0]
    for name, start in (("private", 0), ("public", 5), ("test", 8)):
        rows = np.arange(start, start + SIZES[name])
        np.testing.assert_array_equal(store.features(name)[()], np.stack([rows * 10.0, -rows]).T)


def test_a_row_without_features_or_a_read_error_is_refused(store):
    with pytest.raises(DataError, match=r"^Ray returned no features for 2 of 12 rows$"):
        write_batches([batch(range(10))], store, SIZES)
    with pytest.raises(DataError) as refused:
        write_batches([batch([0, 1]), batch([2], "cannot decode image x.png: truncated\nfix or remove the file")],
                      store, SIZES)
    assert (refused.value.message, refused.value.hint) == ("cannot decode image x.png: truncated",
                                                           "fix or remove the file")
