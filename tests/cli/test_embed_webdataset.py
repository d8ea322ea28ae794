"""embed --source webdataset: tar shards written here by the `webdataset` library itself (ShardWriter, its
`<split>-NNNNNN.tar` naming), read row for row like the same images and labels in an npz; rows are read by
seeking to their members, so the index pickled for a DataLoader worker holds offsets, not images; --shard i/n
embeddings merge into the unsharded artifact. And torchvision's Flowers102 and PCAM folders."""

from __future__ import annotations

import pickle
import tarfile

import h5py
import numpy as np
import pytest
from checks import assert_embeds_like_npz, random_image_parts

from pillar_cli import artifacts
from pillar_cli.data import SourceOptions, load_source
from pillar_cli.data.image_files import decode_image
from pillar_cli.data.webdataset import TarImages, index_samples, read_webdataset, tar_splits

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command
wds = pytest.importorskip("webdataset")

CLASSES = ["cat", "dog", "emu"]


@pytest.fixture(scope="module")
def images():
    return random_image_parts(32)


def write_shards(root, images, label=lambda y: {"cls": int(y)}, maxcount=25, extra=lambda part, i: {}):
    """Shards as webdataset writes them: PNG members (lossless), a label member per sample and `extra`
    ones."""
    root.mkdir(parents=True, exist_ok=True)
    for part, (x, y) in images.items():
        with wds.ShardWriter(str(root / f"{part}-%06d.tar"), maxcount=maxcount, verbose=0) as sink:
            for i, (image, target) in enumerate(zip(x, y)):
                sink.write({"__key__": f"{part}{i:05d}", "png": image, **label(target), **extra(part, i)})


def test_webdataset_shards_read_like_the_same_arrays(pillar, tmp_path, images):
    write_shards(tmp_path / "wds", images)
    assert [p.name for p in tar_splits(tmp_path / "wds")["train"]] == [
        f"train-00000{i}.tar" for i in range(3)
    ]
    assert_embeds_like_npz(pillar, tmp_path, images, "webdataset", tmp_path / "wds", "--classes", "0,1,2")


def test_a_group_member_names_persons_as_an_npz_groups_array_does(pillar, tmp_path, images):
    groups = {part: [f"{part}-patient-{i // 4}" for i in range(len(images[part][1]))] for part in images}
    write_shards(tmp_path / "wds", images, extra=lambda part, i: {"patient": groups[part][i]})
    written = assert_embeds_like_npz(
        pillar,
        tmp_path,
        images,
        "webdataset",
        tmp_path / "wds",
        "--param",
        "group=patient",
        "--classes",
        "0,1,2",
        groups=groups,
    )
    assert artifacts.read_split(f"{written}:private").grouping["source"] == "member .patient"
    write_shards(tmp_path / "some", images, extra=lambda part, i: {"patient": "p"} if i % 2 else {})
    partial = pillar(
        "embed",
        "--source",
        "webdataset",
        "--path",
        tmp_path / "some",
        "--param",
        "group=patient",
        "-o",
        tmp_path / "x.h5",
        expect=4,
    )
    assert partial.stderr.splitlines() == [
        f"error: 30 samples of {tmp_path / 'some'} have no .patient member and 30 have one",
        "hint: every sample needs its person",
    ]


def test_rows_are_read_by_offset_and_a_worker_gets_offsets_not_images(tmp_path, images):
    write_shards(tmp_path, images)
    reader = TarImages(index_samples(tar_splits(tmp_path)["train"], None, "cls"), None)
    assert np.array_equal(reader[np.array([3, 26, 59])], images["train"][0][[3, 26, 59]])  # three shards
    assert np.array_equal(reader.subset(np.array([40, 41]))[1], images["train"][0][41])
    copy = pickle.loads(pickle.dumps(reader))
    assert np.array_equal(copy[40], images["train"][0][40])
    assert len(pickle.dumps(reader)) < images["train"][0].nbytes / 10
    with wds.WebDataset(str(tmp_path / "train-000001.tar"), shardshuffle=False).decode("rgb8") as stream:
        ours = {key: reader[i] for i, key in enumerate(reader.samples.keys)}
        for sample in stream:  # webdataset's own reading of the same shard agrees
            assert np.array_equal(ours[sample["__key__"]], sample["png"]) and int(sample["cls"]) in (0, 1, 2)


def test_text_labels_keep_their_names_and_shards_without_labels_are_to_classify(tmp_path, images):
    write_shards(tmp_path / "named", images, label=lambda y: {"txt": CLASSES[y]})
    named = read_webdataset(tmp_path / "named", None, label="txt")
    assert named.class_names == CLASSES
    assert np.array_equal(
        np.asarray(named.class_names)[named.test_labels], np.asarray(CLASSES)[images["test"][1]]
    )
    write_shards(tmp_path / "bare", images, label=lambda y: {})
    bare = read_webdataset(tmp_path / "bare", None)
    assert not bare.labelled and bare.row_names().tolist() == list(range(80))


def test_sharded_embeddings_of_tar_shards_merge_into_the_unsharded_one(pillar, tmp_path, images):
    write_shards(tmp_path / "wds", images)
    source = [
        "--source",
        "webdataset",
        "--path",
        tmp_path / "wds",
        "--backbone",
        "pixels",
        "--classes",
        "0,1,2",
    ]
    pillar("embed", *source, "-o", tmp_path / "full.h5")
    for i in range(2):
        pillar("embed", *source, "--shard", f"{i}/2", "-o", tmp_path / f"part{i}.h5")
    pillar("embed", "--merge", tmp_path / "part0.h5", tmp_path / "part1.h5", "-o", tmp_path / "merged.h5")
    full, merged = (artifacts.read(tmp_path / name, "embeddings") for name in ("full.h5", "merged.h5"))
    assert merged.provenance.content_hash == full.provenance.content_hash


def test_compressed_shards_and_a_missing_split_are_one_line(pillar, tmp_path, images):
    write_shards(tmp_path / "wds", images)
    with tarfile.open(tmp_path / "train.tar.gz", "w:gz") as tar:
        tar.add(tmp_path / "wds" / "train-000000.tar", arcname="x.tar")
    cases = [
        (
            tmp_path / "train.tar.gz",
            [],
            [
                f"error: {tmp_path / 'train.tar.gz'} is compressed; its members cannot be read by seeking",
                "hint: store WebDataset shards as plain .tar (as webdataset writes them)",
            ],
        ),
        (
            tmp_path / "wds",
            ["--param", "train=training"],
            [
                f"error: {tmp_path / 'wds'} has no split 'training' (its splits: test, train)",
                "hint: name the training split with --param train=SPLIT",
            ],
        ),
    ]
    for path, extra, lines in cases:
        result = pillar(
            "embed", "--source", "webdataset", "--path", path, *extra, "-o", tmp_path / "e.h5", expect=None
        )
        assert result.exit_code == 4 and result.stderr.splitlines() == lines
        assert not (tmp_path / "e.h5").exists()


def test_flowers102_in_torchvisions_folder(pillar, tmp_path):
    from PIL import Image
    from scipy.io import savemat

    folder, rng = tmp_path / "flowers-102", np.random.default_rng(1)
    (folder / "jpg").mkdir(parents=True)
    for number in range(1, 13):  # images of many sizes, as the real ones
        Image.fromarray(rng.integers(0, 256, (20 + number, 30, 3), dtype=np.uint8)).save(
            folder / "jpg" / f"image_{number:05d}.jpg"
        )
    labels = np.array([3, 1, 102, 3, 1, 102, 3, 1, 102, 3, 1, 102], dtype=np.uint8)
    savemat(folder / "imagelabels.mat", {"labels": labels[None]})
    savemat(
        folder / "setid.mat",
        {
            "trnid": np.array([[1, 5, 9]], np.uint16),
            "valid": np.array([[2, 6]], np.uint16),
            "tstid": np.array([[3, 4, 7, 8, 10, 11, 12]], np.uint16),
        },
    )
    dataset = load_source("flowers102", SourceOptions(tmp_path, {"size": "16"}))
    assert dataset.class_names == [str(number) for number in range(1, 103)] and dataset.part_sizes == [5, 7]
    assert np.asarray(dataset.class_names)[dataset.labels].tolist() == [
        "3",
        "1",
        "1",
        "102",
        "102",
    ]  # 1, 2, 5, 6, 9
    expected = decode_image(str(folder / "jpg" / "image_00006.jpg"), 16)
    assert np.array_equal(dataset.rows(np.array([3]))[0][0], expected)
    pillar(
        "embed",
        "--source",
        "flowers102",
        "--path",
        tmp_path,
        "--param",
        "size=16",
        "--val-fraction",
        "0",
        "--public-fraction",
        "0.4",
        "-o",
        tmp_path / "f.h5",
    )
    assert len(artifacts.read_split(f"{tmp_path / 'f.h5'}:test").index) == 7


def test_pcam_in_torchvisions_folder(tmp_path):
    folder, rng = tmp_path / "pcam", np.random.default_rng(2)
    folder.mkdir()
    arrays = {
        part: (rng.integers(0, 256, (n, 96, 96, 3), dtype=np.uint8), rng.integers(0, 2, (n, 1, 1, 1)))
        for part, n in (("train", 6), ("valid", 2), ("test", 4))
    }
    for part, (x, y) in arrays.items():
        with h5py.File(folder / f"camelyonpatch_level_2_split_{part}_x.h5", "w") as file:
            file["x"] = x
        with h5py.File(folder / f"camelyonpatch_level_2_split_{part}_y.h5", "w") as file:
            file["y"] = y
    dataset = load_source("pcam", SourceOptions(tmp_path))
    assert dataset.part_sizes == [6, 4] and dataset.class_names == ["normal", "tumour"]
    inputs, labels = dataset.rows(np.arange(6, 10))
    assert np.array_equal(inputs, arrays["test"][0]) and np.array_equal(labels, arrays["test"][1].ravel())
