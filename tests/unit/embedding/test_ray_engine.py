"""The Ray engine's decoding task and driver side: a worker decodes the rows the driver numbered, or says its
source differs; features written at their rows' positions whatever order batches arrive in, a row that arrives
twice (a task Ray ran again) kept once, and a run that leaves a row out or carries a read error refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pillar_cli.embedding.extraction import FeatureStore
from pillar_cli.embedding.job import EmbeddingJob
from pillar_cli.embedding.ray_engine import _decoder, write_batches
from pillar_cli.embedding.request import EmbedRequest
from pillar_cli.errors import DataError

FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")  # Debian's dataset-fashion-mnist
SIZES = {"private": 5, "public": 3, "test": 4}  # row numbers 0-4, 5-7 and 8-11


def batch(ids, error=""):
    ids = np.asarray(ids, dtype=np.int64)
    return {
        "id": ids,
        "features": np.stack([ids * 10.0, -ids]).T.astype(np.float32),
        "error": np.full(len(ids), error, dtype=object),
    }


@pytest.fixture
def store(tmp_path):
    store = FeatureStore(tmp_path / "out.h5.partial", {}, SIZES, 2, resume=False)
    yield store
    store.close()


def test_rows_land_at_their_positions_in_any_order_and_a_repeated_row_keeps_its_first_features(store):
    repeated = batch([3, 4, 5])
    repeated["features"][:] = -1  # a second run of rows 3-5 (say, with other float rounding) is not written
    heard = []
    write_batches(
        [batch([9, 8, 10, 11]), batch([5, 6, 7, 0, 1, 2, 3, 4]), repeated], store, SIZES, heard.append
    )
    assert heard == [4, 8, 0]
    for name, start in (("private", 0), ("public", 5), ("test", 8)):
        rows = np.arange(start, start + SIZES[name])
        np.testing.assert_array_equal(store.features(name)[()], np.stack([rows * 10.0, -rows]).T)


def test_a_row_without_features_or_a_read_error_is_refused(store):
    with pytest.raises(DataError, match=r"^Ray returned no features for 2 of 12 rows$"):
        write_batches([batch(range(10))], store, SIZES)
    with pytest.raises(DataError) as refused:
        write_batches(
            [batch([0, 1]), batch([2], "cannot decode image x.png: truncated\nfix or remove the file")],
            store,
            SIZES,
        )
    assert (refused.value.message, refused.value.hint) == (
        "cannot decode image x.png: truncated",
        "fix or remove the file",
    )


@pytest.mark.parametrize("source", ["digits", "fashion-mnist"])  # fashion-mnist: a train and a test part
def test_a_worker_decodes_the_rows_the_driver_numbered_or_refuses_a_source_that_reads_otherwise(source):
    if source == "fashion-mnist" and not FASHION_MNIST.is_dir():
        pytest.skip(f"needs {FASHION_MNIST} (apt-get install dataset-fashion-mnist)")
    request = EmbedRequest(source=source, limit=300)
    job = EmbeddingJob.of(request.dataset(), request.plan)
    order = np.concatenate(list(job.splits.values()))
    numbers = np.arange(len(order) - 100, len(order))  # the last rows of the val split and the first of test
    decoded = _decoder(request, job.dataset.fingerprint)({"id": numbers})
    one_at_a_time = [job.dataset.rows(np.array([row]))[0][0] for row in order[numbers]]
    np.testing.assert_array_equal(decoded["images"], np.stack(one_at_a_time))
    assert list(decoded["error"]) == [""] * 100
    other = _decoder(request, "0" * 64)({"id": numbers[:2]})
    message, hint = other["error"][0].split("\n")
    assert (
        message == "the source reads otherwise on a Ray worker's node than on this machine (fingerprint "
        f"{job.dataset.fingerprint[:12]}, here 000000000000)"
    )
    assert hint == "every node must read the same source at the same path" and len(other["id"]) == 1
