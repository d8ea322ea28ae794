"""Rows left in the file (read_split's on_disk): the same rows, projections and heads as the rows read whole,
bit for bit; a file changed after it was read, or a block that cannot be read, is one line naming it."""

from __future__ import annotations

import json
import re

import h5py
import numpy as np
import pytest
from checks import edited_copy
from sklearn.datasets import load_digits

from pillar_cli.artifacts import layout, read, read_split, write
from pillar_cli.artifacts.embeddings import embeddings_artifact
from pillar_cli.artifacts.model import stored_runs
from pillar_cli.artifacts.stored_rows import StoredRows, all_finite, non_finite_rows
from pillar_cli.errors import ArtifactError
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_sweep, sweep_artifact
from pillar_cli.projection import PublicPCA, project
from pillar_cli.projection.pca import projection_artifact
from pillar_cli.reporting.metrics import selected_metrics, standardize


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    path = tmp_path_factory.mktemp("rows") / "e.h5"
    splits = {
        "private": (x[:1400], np.arange(1400), y[:1400], None),
        "public": (x[1400:], 1400 + np.arange(len(x) - 1400), None, None),
    }
    write(path, embeddings_artifact(splits, {"class_names": [str(c) for c in range(10)]}))
    return path


def test_rows_on_disk_read_as_the_rows_in_memory(embedded):
    whole, on_disk = read_split(f"{embedded}:private"), read_split(f"{embedded}:private", on_disk=True)
    rows = on_disk.features
    assert isinstance(rows, StoredRows) and (len(rows), rows.shape, rows.dtype) == (
        1400,
        (1400, 64),
        np.float32,
    )
    assert np.array_equal(rows[100:350], whole.features[100:350]) and np.array_equal(
        np.asarray(rows), whole.features
    )
    assert np.array_equal(np.stack(list(rows)), whole.features)  # iterated a block at a time
    assert np.array_equal(rows[[5, 2, 9]], whole.features[[5, 2, 9]]) and rows[7:7].shape == (0, 64)
    public = read_split(f"{embedded}:public", on_disk=True)
    both = rows.joined(public.features)  # rows of two splits of one file, one after the other, still on disk
    assert isinstance(both, StoredRows) and both.shape == (1797, 64)
    assert np.array_equal(
        both[1300:1500], np.concatenate([whole.features[1300:], np.asarray(public.features)[:100]])
    )
    every = np.concatenate([whole.features, np.asarray(public.features)])
    picked = np.array([[1500, 3, -1], [3, 1399, 1400]])  # any order, repeats, negative, across both datasets
    assert np.array_equal(both[picked], every[picked]) and np.array_equal(both[[1796]], every[[1796]])
    with pytest.raises(IndexError):
        both[[1797]]
    assert all_finite(rows) and non_finite_rows(rows) == 0
    pca = PublicPCA(20).fit(read_split(f"{embedded}:public").features)
    assert np.array_equal(project(pca, rows, 20), project(pca, whole.features, 20))


def test_a_fit_on_rows_on_disk_is_the_fit_on_the_rows_in_memory_bit_for_bit(embedded, tmp_path):
    whole, on_disk = read_split(f"{embedded}:public"), read_split(f"{embedded}:public", on_disk=True)
    fits = [PublicPCA(20).fit(rows) for rows in (whole.features, on_disk.features)]
    for name in ("mean_", "scale_", "components_", "eigenvalues_", "row_digests_"):
        assert np.array_equal(getattr(fits[0], name), getattr(fits[1], name)), name
    # embeddings that name no source
    stored = write(tmp_path / "pca.h5", projection_artifact(fits[1], on_disk))
    assert "source_fingerprint" not in read(stored.path, "projection").attrs


def test_a_sweep_on_rows_on_disk_trains_the_same_heads_bit_for_bit(embedded):
    pca = PublicPCA(20).fit(read_split(f"{embedded}:public").features)
    request = SweepRequest(
        method=["pillar", "dp-ls"],
        k=[10],
        epsilon=[1.0],
        delta=1e-4,
        steps=[40],
        batch_size=[256],
        lr=[0.5],
        noise_seed=3,
        val="hold-out",
        device="cpu",
    )
    heads = []
    for on_disk in (False, True):
        split = read_split(f"{embedded}:private", on_disk=on_disk)
        data = SweepData(pca, split.features, split.labels, None, None, 10, units=split.units)
        heads.append([(run.head.weights, run.head.bias) for run in run_sweep(data, request).runs])
    assert len(heads[0]) == 2
    assert all(np.array_equal(a, b) for (wa, ba), (wb, bb) in zip(*heads) for a, b in ((wa, wb), (ba, bb)))


def test_metrics_on_rows_on_disk_are_the_metrics_on_the_rows_in_memory(embedded, monkeypatch):
    """Evaluation reads its split once, a block at a time (blocks of 100 rows here, so that 1,400 rows are
    many blocks); every selected run's metrics equal those of the rows in memory, and its accuracy is that of
    its stored head applied to every row at once."""
    public = read_split(f"{embedded}:public").features
    pca = PublicPCA(20).fit(public)
    x, y = read_split(f"{embedded}:private").features, read_split(f"{embedded}:private").labels
    request = SweepRequest(
        method=["pillar", "dp-ls"],
        k=[10],
        epsilon=[1.0],
        delta=1e-4,
        steps=[40],
        batch_size=[256],
        lr=[0.5],
        seed=[0, 1],
        val="hold-out",
        device="cpu",
    )
    result = run_sweep(SweepData(pca, x, y, None, None, 10), request)
    model = sweep_artifact(result, pca, PrivacySettings(1e-4), 10, len(x))
    monkeypatch.setattr(layout, "BLOCK_BYTES", 100 * 64 * 4)
    rows = [
        selected_metrics([model], features, y)
        for features in (x, read_split(f"{embedded}:private", on_disk=True).features)
    ]
    assert len(rows[0]) == 2 and json.dumps(rows[0]) == json.dumps(rows[1])  # NaN (no val accuracy) included
    z = standardize(x, model)  # the stored heads on every row at once, as evaluation computed them before
    whole: dict[tuple, list[float]] = {}
    for run in stored_runs([model]):
        whole.setdefault(run.key.cell, []).append(float(np.mean(run.logits(z).argmax(axis=1) == y)))
    assert {(row["method"], row["k"], row["epsilon"]): row["accuracies"] for row in rows[0]} == whole


def test_a_file_changed_after_it_was_read_is_refused_before_its_rows_are_used(embedded, tmp_path):
    copy = tmp_path / "e.h5"
    copy.write_bytes(embedded.read_bytes())
    rows = read_split(f"{copy}:private", on_disk=True).features
    with h5py.File(copy, "r+") as h5:
        h5["splits/private/features"][0, 0] = 99.0
    with pytest.raises(ArtifactError, match=f"^{copy} changed while it was read$"):
        rows[0:10]


def test_a_block_that_cannot_be_read_is_one_line_naming_its_rows(embedded):
    # a dataset the file lacks
    rows = StoredRows(embedded, (("splits/private/missing", 1400),), (64,), np.float32)
    with pytest.raises(
        ArtifactError,
        match=rf"^{embedded}: cannot read rows 512–1023 of "
        r"/splits/private/missing \(\"?Unable to synchronously open object",
    ):
        rows[512:1024]


@pytest.mark.parametrize("stored", ["compressed", "checksummed"])
def test_a_damaged_chunk_in_the_middle_is_one_line_naming_the_split_and_the_block(
    embedded, tmp_path, monkeypatch, pillar, stored
):
    """Damaged bytes in the middle of the private features (a bad disk sector) are found as the file is hashed
    on reading: a compressed chunk no longer decompresses; in the uncompressed file pillar writes, each chunk
    of a large array carries a checksum, so bytes that still read are refused as their block too, not only as
    a content hash that no longer matches. The error names the file, the split's dataset and the rows of the
    block that holds them. A read of another split rehashes that split's arrays only: the damaged block is
    never read, and the public split's projection is the intact file's."""
    damaged = tmp_path / "damaged.h5"
    if stored == "compressed":
        with edited_copy(embedded, damaged) as h5:  # the private features in compressed chunks of 100 rows
            features = h5["splits/private/features"][()]
            del h5["splits/private/features"]
            h5.create_dataset("splits/private/features", data=features, chunks=(100, 64), compression="gzip")
    else:
        monkeypatch.setattr(layout, "CHUNK_VALUES", 100 * 64)  # chunks of 100 rows
        write(damaged, read(embedded, "embeddings"))
    with h5py.File(damaged, "r") as h5:
        features = h5["splits/private/features"]
        assert features.chunks == (100, 64) and features.fletcher32 == (stored == "checksummed")
        chunk = features.id.get_chunk_info(7)  # rows 700–799
    with open(damaged, "r+b") as handle:
        handle.seek(chunk.byte_offset + 10)
        handle.write(b"\xff" * 30)
    monkeypatch.setattr(layout, "BLOCK_BYTES", 300 * 64 * 4)  # blocks of 300 rows
    reason = "(Can't synchronously read data (filter returned failure during read))"
    with pytest.raises(
        ArtifactError,
        match=re.escape(f"{damaged}: cannot read rows 600–899 of /splits/private/features {reason}"),
    ):
        read_split(f"{damaged}:private")
    monkeypatch.undo()
    pillar("fit-pca", f"{damaged}:public", "-o", tmp_path / "pca.h5")
    pillar("fit-pca", f"{embedded}:public", "-o", tmp_path / "intact.h5")
    assert np.array_equal(
        read(tmp_path / "pca.h5", "projection").arrays["components"],
        read(tmp_path / "intact.h5", "projection").arrays["components"],
    )
