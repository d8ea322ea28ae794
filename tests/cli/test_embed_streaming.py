"""Image files are indexed, not decoded, until DataLoader workers read their rows: the artifact does not
depend on the number of workers, a resumed run decodes only the rows not yet done, torchvision's on-disk
layouts are read, and an undecodable file is one clean error (or, with --skip-bad, a dropped and listed
row)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from checks import assert_clean_failure
from PIL import Image

from pillar_cli import artifacts
from pillar_cli.data import image_files
from pillar_cli.embedding import extraction

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def write_folder(root, classes=("cat", "dog", "emu"), per_class=40, side=24):
    rng = np.random.default_rng(0)
    for name in classes:
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 255, (side, side + 4, 3), dtype=np.uint8)).save(
                root / name / f"{i}.jpg"
            )
    return root


def test_worker_count_does_not_change_features_labels_or_rows(pillar, tmp_path):
    folder = write_folder(tmp_path / "images")
    command = [
        "embed",
        "--source",
        "image-folder",
        "--path",
        folder,
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "16",
    ]
    pillar(*command, "--workers", "0", "-o", tmp_path / "serial.h5")
    pillar(*command, "--workers", "2", "-o", tmp_path / "parallel.h5")
    for split in ("private", "public", "val", "test"):
        serial, parallel = (
            artifacts.read_split(f"{tmp_path / name}.h5:{split}") for name in ("serial", "parallel")
        )
        assert serial.features.tobytes() == parallel.features.tobytes()
        assert serial.index.tobytes() == parallel.index.tobytes()
        assert (
            serial.labels is None and parallel.labels is None
        ) or serial.labels.tobytes() == parallel.labels.tobytes()


def test_resume_decodes_only_the_rows_not_done(pillar, tmp_path, monkeypatch):
    folder = write_folder(tmp_path / "images")
    monkeypatch.chdir(tmp_path)
    command = [
        "embed",
        "--source",
        "image-folder",
        "--path",
        folder,
        "--param",
        "size=16",
        "--batch-size",
        "8",
        "--workers",
        "0",
        "-o",
        "emb.h5",
    ]
    decodes, real_decode = [], image_files.decode_image
    monkeypatch.setattr(
        image_files,
        "decode_image",
        lambda file, size, **how: decodes.append(file) or real_decode(file, size, **how),
    )
    real_write, writes = extraction.FeatureStore.write, []

    def interrupted_write(self, split, start, rows):
        writes.append(split)
        if len(writes) == 9:  # a simulated Ctrl-C inside the second split
            raise KeyboardInterrupt
        real_write(self, split, start, rows)

    monkeypatch.setattr(extraction.FeatureStore, "write", interrupted_write)
    pillar(*command, expect=130)
    import h5py

    with h5py.File(tmp_path / "emb.h5.partial", "r") as partial:
        done = sum(int(partial[split].attrs["done"]) for split in partial)
    monkeypatch.setattr(extraction.FeatureStore, "write", real_write)
    decodes.clear()
    pillar(*command, "--resume")
    assert 0 < done < 120 and len(decodes) == 120 - done  # every finished row skipped without being decoded
    assert len(set(decodes)) == len(decodes)


def test_torchvision_cifar10_layout(pillar, tmp_path):
    rng = np.random.default_rng(1)
    batches = tmp_path / "cifar-10-batches-py"
    batches.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 255, (6, 3072), dtype=np.uint8)
        with open(batches / name, "wb") as handle:
            pickle.dump({b"data": data, b"labels": [0, 1, 2, 3, 4, 5]}, handle)
    with open(batches / "batches.meta", "wb") as handle:
        pickle.dump({b"label_names": [f"c{i}".encode() for i in range(10)]}, handle)
    # the torchvision root
    pillar("embed", "--source", "cifar", "--path", tmp_path, "-o", tmp_path / "emb.h5")
    test = artifacts.read_split(f"{tmp_path / 'emb.h5'}:test")
    with open(batches / "test_batch", "rb") as handle:
        expected = pickle.load(handle)[b"data"].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    np.testing.assert_allclose(test.features, expected.reshape(6, -1).astype(np.float32) / 255, atol=1e-6)
    assert test.labels.tolist() == [0, 1, 2, 3, 4, 5]


def test_torchvision_gtsrb_layout(pillar, tmp_path):
    base = tmp_path / "gtsrb"
    colours = {}
    for class_id in (0, 1, 2):
        folder = base / "GTSRB" / "Training" / f"{class_id:05d}"
        folder.mkdir(parents=True)
        for i in range(4):
            colours[(class_id, i)] = 30 * class_id + i
            Image.fromarray(np.full((10, 12, 3), colours[(class_id, i)], np.uint8)).save(folder / f"{i}.ppm")
    test_dir = base / "GTSRB" / "Final_Test" / "Images"
    test_dir.mkdir(parents=True)
    rows = ["Filename;Width;Height;Roi.X1;Roi.Y1;Roi.X2;Roi.Y2;ClassId"]
    for i, class_id in enumerate((2, 0, 1, 2)):
        Image.fromarray(np.full((9, 9, 3), 200 + i, np.uint8)).save(test_dir / f"{i:05d}.ppm")
        rows.append(f"{i:05d}.ppm;9;9;0;0;8;8;{class_id}")
    (base / "GT-final_test.csv").write_text("\n".join(rows) + "\n")
    pillar(
        "embed",
        "--source",
        "gtsrb",
        "--path",
        tmp_path,
        "--param",
        "size=8",
        "--public-fraction",
        "0.25",
        "-o",
        tmp_path / "emb.h5",
    )
    test = artifacts.read_split(f"{tmp_path / 'emb.h5'}:test")
    assert test.labels.tolist() == [2, 0, 1, 2] and test.index.tolist() == [12, 13, 14, 15]
    np.testing.assert_allclose(test.features[:, 0], np.array([200, 201, 202, 203]) / 255, atol=1e-6)
    private = artifacts.read_split(f"{tmp_path / 'emb.h5'}:private")
    for row, label, feature in zip(private.index, private.labels, private.features[:, 0]):
        assert label == row // 4 and feature == pytest.approx(colours[(row // 4, row % 4)] / 255)


def test_a_corrupt_jpeg_is_one_line_naming_it(pillar, tmp_path):
    folder = write_folder(tmp_path / "images", per_class=10)
    (folder / "dog" / "5.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    out = tmp_path / "emb.h5"
    result = pillar(
        "embed", "--source", "image-folder", "--path", folder, "--workers", "2", "-o", out, expect=None
    )
    error, hint = result.stderr.splitlines()[-2:]
    assert result.exit_code == 4 and error.startswith(
        f"error: cannot decode image {folder / 'dog' / '5.jpg'}: "
    )
    assert (
        hint
        == f"hint: fix or remove the file and resume (the rows done so far are kept in {out}.partial for "
        "--resume), or pass --skip-bad"
    )
    assert "Traceback" not in result.stderr and not out.exists()

    skipping = tmp_path / "skipping.h5"
    pillar(
        "embed", "--source", "image-folder", "--path", folder, "--workers", "2", "--skip-bad", "-o", skipping
    )
    embedded = artifacts.read(skipping, "embeddings")
    assert embedded.attrs["skipped_files"] == [str(folder / "dog" / "5.jpg")]
    rows = np.concatenate([embedded.array(f"splits/{s}/index") for s in embedded.attrs["splits"]])
    assert len(rows) == 29 and 15 not in rows  # the dog folder's sixth file is source row 15


def test_skip_bad_on_arrays_is_refused(pillar, tmp_path):
    out = tmp_path / "emb.h5"
    assert_clean_failure(
        pillar("embed", "--source", "digits", "--skip-bad", "-o", out, expect=None),
        2,
        "--skip-bad applies to sources of image files; 'digits' holds arrays",
        out,
    )
