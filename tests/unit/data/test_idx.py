"""The IDX reader: files written here (plain and gzip) read back exactly; damaged ones are refused in one
line."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

from pillar_cli.data.idx import FASHION_MNIST_CLASSES, read_idx, read_idx_folder
from pillar_cli.data.sources import SourceOptions, load_source
from pillar_cli.errors import DataError


def write_idx(path, array: np.ndarray, code: int = 0x08, compress: bool = False) -> None:
    """The IDX layout written out by hand: zero, zero, type code, rank, big-endian dimensions, big-endian
    values."""
    dtype = {0x08: ">u1", 0x0B: ">i2", 0x0D: ">f4"}[code]
    raw = (
        bytes([0, 0, code, array.ndim])
        + struct.pack(f">{array.ndim}I", *array.shape)
        + array.astype(dtype).tobytes()
    )
    path.write_bytes(gzip.compress(raw) if compress else raw)


def mnist_folder(root, train: int = 12, test: int = 5, compress: bool = True, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = {
        "train": (rng.integers(0, 256, (train, 6, 7), dtype=np.uint8), rng.integers(0, 10, train)),
        "t10k": (rng.integers(0, 256, (test, 6, 7), dtype=np.uint8), rng.integers(0, 10, test)),
    }
    suffix = ".gz" if compress else ""
    for part, (images, labels) in arrays.items():
        write_idx(root / f"{part}-images-idx3-ubyte{suffix}", images, compress=compress)
        write_idx(root / f"{part}-labels-idx1-ubyte{suffix}", labels, compress=compress)
    return arrays


@pytest.mark.parametrize("compress", [False, True])
def test_an_idx_folder_reads_back_what_was_written(tmp_path, compress):
    arrays = mnist_folder(tmp_path, compress=compress)
    dataset = read_idx_folder(tmp_path, "kmnist")
    np.testing.assert_array_equal(dataset.inputs[..., 0], arrays["train"][0])
    np.testing.assert_array_equal(dataset.labels, arrays["train"][1])
    np.testing.assert_array_equal(dataset.test_inputs[..., 0], arrays["t10k"][0])
    np.testing.assert_array_equal(dataset.test_labels, arrays["t10k"][1])
    assert dataset.inputs.shape == (12, 6, 7, 1) and dataset.inputs.dtype == np.uint8
    assert dataset.class_names == [str(c) for c in range(int(arrays["train"][1].max()) + 1)]
    fashion = load_source("fashion-mnist", SourceOptions(tmp_path))
    assert fashion.class_names == FASHION_MNIST_CLASSES and fashion.name == "fashion-mnist"


def test_every_idx_type_and_byte_order_is_read(tmp_path):
    values = np.arange(-6, 6).reshape(3, 4)
    write_idx(tmp_path / "shorts", values, 0x0B)
    write_idx(tmp_path / "floats.gz", values / 4, 0x0D, compress=True)
    np.testing.assert_array_equal(read_idx(tmp_path / "shorts"), values)
    np.testing.assert_array_equal(read_idx(tmp_path / "floats.gz"), values / 4)
    assert read_idx(tmp_path / "shorts").dtype == np.dtype("int16")  # native byte order once read


def test_damaged_idx_files_are_refused_in_one_line(tmp_path):
    mnist_folder(tmp_path, compress=False)
    images = tmp_path / "train-images-idx3-ubyte"
    images.write_bytes(images.read_bytes()[:-10])
    with pytest.raises(
        DataError,
        match=r"train-images-idx3-ubyte is cut short or padded: its header promises "
        r"\(12, 6, 7\) values of 1 byte\(s\) and it holds 494 bytes of data$",
    ):
        read_idx_folder(tmp_path, "cut")
    images.write_bytes(b"PK\x03\x04not an idx file")
    with pytest.raises(
        DataError, match=r"train-images-idx3-ubyte is not an IDX file \(its header is 504b0304\)$"
    ):
        read_idx_folder(tmp_path, "zip")
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    images.unlink()
    with pytest.raises(
        DataError, match=r"has no train-images-idx3-ubyte\[.gz\]: an IDX folder holds the files"
    ):
        read_idx_folder(tmp_path, "missing")


def test_idx_headers_and_labels_that_read_as_something_else_are_refused(tmp_path):
    """Each once a traceback or a silently wrong read: header dimensions whose product overflows 64 bits, a
    file of no images, a test part of another image size, and labels that are fractions, NaN or negative."""
    mnist_folder(tmp_path, compress=False)
    images = tmp_path / "train-images-idx3-ubyte"
    # product ≡ 0 mod 2⁶⁴
    images.write_bytes(bytes([0, 0, 8, 3]) + struct.pack(">3I", 2**32 - 1, 2**32 - 1, 2**31))
    with pytest.raises(
        DataError,
        match=r"is cut short or padded: its header promises \(4294967295, 4294967295, "
        r"2147483648\) values of 1 byte\(s\) and it holds 0 bytes of data$",
    ):
        read_idx_folder(tmp_path, "overflow")
    write_idx(images, np.zeros((0, 6, 7), np.uint8))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(0, np.uint8))
    with pytest.raises(
        DataError, match=r"train-images-idx3-ubyte holds no images \(its header says \(0, 6, 7\)\)$"
    ):
        read_idx_folder(tmp_path, "empty")
    mnist_folder(tmp_path, compress=False)
    write_idx(tmp_path / "t10k-images-idx3-ubyte", np.zeros((5, 8, 8), np.uint8))
    with pytest.raises(DataError, match=r": the test images are 8 × 8, the train images 7 × 6$"):
        read_idx_folder(tmp_path, "sizes")
    mnist_folder(tmp_path, compress=False)
    labels = tmp_path / "train-labels-idx1-ubyte"
    for values, code, message in (
        (np.full(12, 0.5), 0x0D, "holds float32 labels; IDX labels are whole numbers of a class$"),
        (np.full(12, np.nan), 0x0D, "holds float32 labels"),
        (np.r_[np.zeros(3), -1, np.zeros(8)], 0x0B, r": label -1 of row 3 names no class$"),
    ):
        write_idx(labels, values, code)
        with pytest.raises(DataError, match=message):
            read_idx_folder(tmp_path, "labels")
