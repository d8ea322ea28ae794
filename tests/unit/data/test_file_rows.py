"""A plain HDF5 source's rows stay in the file (`embed --source h5`): the dataset read from it is the one the
in-memory reader makes of the same arrays, and reading, hashing and fingerprinting it never holds its rows
whole."""

from __future__ import annotations

import tracemalloc

import h5py
import numpy as np

from pillar_cli.data.file_rows import FileRows
from pillar_cli.data.sources import SourceOptions, load_source


def test_an_h5_source_read_by_blocks_is_the_npz_readers_dataset(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {
        "x": rng.standard_normal((500, 12)),  # float64: read as float32, as in memory
        "y": rng.integers(0, 3, 500),
        "x_test": rng.standard_normal((40, 12)),
        "y_test": rng.integers(0, 3, 40),
        "class_names": np.array(["a", "b", "c"]),
    }
    np.savez(tmp_path / "d.npz", **arrays)
    with h5py.File(tmp_path / "d.h5", "w") as h5:
        for name, array in arrays.items():
            h5[name] = array.astype("S") if name == "class_names" else array
    np.savez_compressed(tmp_path / "compressed.npz", **arrays)
    in_memory = load_source("npz", SourceOptions(tmp_path / "compressed.npz"))  # a compressed member: whole
    assert isinstance(in_memory.inputs, np.ndarray)
    for source, path in (("h5", tmp_path / "d.h5"), ("npz", tmp_path / "d.npz")):
        streamed = load_source(source, SourceOptions(path))
        assert isinstance(streamed.inputs, FileRows) and isinstance(streamed.test_inputs, FileRows)
        assert streamed.inputs.dtype == np.float32 and streamed.inputs.shape == (500, 12)
        np.testing.assert_array_equal(np.asarray(streamed.inputs), in_memory.inputs)
        np.testing.assert_array_equal(streamed.labels, in_memory.labels)
        assert streamed.fingerprint == in_memory.fingerprint and streamed.row_keys() == in_memory.row_keys()
        ids = np.array([0, 1, 2, 7, 8, 499])
        np.testing.assert_array_equal(streamed.rows(ids)[0], in_memory.rows(ids)[0])
        assert streamed.reopened().fingerprint == in_memory.fingerprint  # a worker's fresh handle


def test_reading_hashing_and_fingerprinting_an_h5_source_holds_a_block_not_the_rows(tmp_path):
    rng = np.random.default_rng(0)
    rows, width = 100_000, 256  # 205 MB of float64 features
    with h5py.File(tmp_path / "big.h5", "w") as h5:
        features = h5.create_dataset("x", (rows, width), dtype="f8")
        for start in range(0, rows, 20_000):  # 16 levels: as large once read, quick to compress
            features[start : start + 20_000] = rng.integers(0, 16, (20_000, width))
        h5["y"] = rng.integers(0, 10, rows)
        h5["class_names"] = np.arange(10).astype("S")

    def peak_reading(source: str, path) -> int:
        tracemalloc.start()
        try:
            dataset = load_source(source, SourceOptions(path))
            dataset.fingerprint, dataset.row_keys(), dataset.rows(np.arange(0, rows, 7))
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    with h5py.File(tmp_path / "big.h5") as h5:
        arrays = {"x": h5["x"][()], "y": h5["y"][()], "class_names": np.arange(10).astype(str)}
    np.savez(tmp_path / "big.npz", **arrays)
    np.savez_compressed(tmp_path / "whole.npz", **arrays)
    del arrays
    source_bytes = rows * width * 8
    peaks = {name: peak_reading(source, tmp_path / name) for name, source in
             (("big.h5", "h5"), ("big.npz", "npz"), ("whole.npz", "npz"))}  # fmt: skip
    # blocks of 16 and 32 MiB (fingerprint, keys), the keys and labels, the rows asked for
    assert max(peaks["big.h5"], peaks["big.npz"]) < 0.5 * source_bytes < source_bytes < peaks["whole.npz"], (
        peaks
    )


def test_a_compressed_member_too_large_to_read_whole_is_refused_with_how_to_store_it(tmp_path, monkeypatch):
    import pytest

    from pillar_cli.data import readers
    from pillar_cli.errors import DataError

    np.savez_compressed(tmp_path / "c.npz", x=np.zeros((100, 8)), y=np.zeros(100, dtype=int))
    monkeypatch.setattr(readers, "COMPRESSED_LIMIT", 1000)  # 6,400 bytes once inflated
    with pytest.raises(
        DataError, match=r"c.npz: 'x' is stored compressed \(0.0 MiB once inflated\), which is read whole$"
    ) as refused:
        load_source("npz", SourceOptions(tmp_path / "c.npz"))
    assert (
        refused.value.hint
        == "save it with np.savez (uncompressed: read a block at a time) or as HDF5 (the h5 source)"
    )
