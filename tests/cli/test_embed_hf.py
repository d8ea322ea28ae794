"""embed --source hf: Hugging Face datasets on disk, written here by the `datasets` library itself
(save_to_disk, and Parquet shards in the Hub's naming), read row for row like the same images and labels in an
npz."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from checks import assert_embeds_like_npz, random_image_parts

from pillar_cli import artifacts
from pillar_cli.data.hf_datasets import EncodedImages, hf_splits, read_hf

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command
datasets = pytest.importorskip("datasets")

CLASSES = ["cat", "dog", "emu"]


@pytest.fixture(scope="module")
def images():
    return random_image_parts(12)


def hf_dataset(images, label_feature, groups: dict | None = None):
    """The images as a DatasetDict (train, test); `groups` (part → ids) adds a string column `patient`."""
    from PIL import Image

    features = datasets.Features(
        {
            "img": datasets.Image(),
            "label": label_feature,
            **({} if groups is None else {"patient": datasets.Value("string")}),
        }
    )

    def part(name, x, y):
        labels = [CLASSES[i] for i in y] if isinstance(label_feature, datasets.Value) else y.tolist()
        return datasets.Dataset.from_dict(
            {
                "img": [Image.fromarray(a) for a in x],
                "label": labels,
                **({} if groups is None else {"patient": groups[name]}),
            },
            features=features,
        )

    return datasets.DatasetDict({name: part(name, *images[name]) for name in images})


@pytest.mark.parametrize("layout", ["save_to_disk", "parquet"])
def test_hf_datasets_read_like_the_same_arrays(pillar, tmp_path, images, layout):
    dataset = hf_dataset(images, datasets.ClassLabel(names=CLASSES))
    root = tmp_path / layout
    if layout == "save_to_disk":
        dataset.save_to_disk(str(root))
    else:  # two shards of train, row groups of 8 rows, as the Hub names them
        for shard, rows in enumerate((range(0, 35), range(35, 60))):
            dataset["train"].select(rows).to_parquet(
                str(root / "data" / f"train-0000{shard}-of-00002.parquet"), batch_size=8
            )
        dataset["test"].to_parquet(str(root / "data" / "test-00000-of-00001.parquet"), batch_size=8)
    written = assert_embeds_like_npz(pillar, tmp_path, images, "hf", root, classes=tuple(CLASSES))
    assert artifacts.read_split(f"{written}:test").attrs["class_names"] == CLASSES


def test_a_group_column_names_persons_as_an_npz_groups_array_does(pillar, tmp_path, images):
    groups = {part: [f"{part}-patient-{i // 4}" for i in range(len(images[part][1]))] for part in images}
    hf_dataset(images, datasets.ClassLabel(names=CLASSES), groups).save_to_disk(str(tmp_path / "d"))
    written = assert_embeds_like_npz(
        pillar,
        tmp_path,
        images,
        "hf",
        tmp_path / "d",
        "--param",
        "group=patient",
        groups=groups,
        classes=tuple(CLASSES),
    )
    assert artifacts.read_split(f"{written}:private").grouping["source"] == "column patient"
    missing = pillar(
        "embed",
        "--source",
        "hf",
        "--path",
        tmp_path / "d",
        "--param",
        "group=ward",
        "-o",
        tmp_path / "x.h5",
        expect=2,
    )
    assert (
        missing.stderr.splitlines()[0]
        == "error: no column 'ward' for the persons (columns: img, label, patient)"
    )


def test_a_string_label_column_keeps_its_names_and_images_decode_a_row_group_at_a_time(
    pillar, tmp_path, images
):
    hf_dataset(images, datasets.Value("string"))["train"].to_parquet(
        str(tmp_path / "train.parquet"), batch_size=8
    )
    pillar(
        "embed",
        "--source",
        "hf",
        "--path",
        tmp_path,
        "--backbone",
        "pixels",
        "--classes-from-labels",
        "-o",
        tmp_path / "e.h5",
    )
    private = artifacts.read_split(f"{tmp_path / 'e.h5'}:private")
    assert private.attrs["class_names"] == sorted({CLASSES[i] for i in images["train"][1]})
    reader = EncodedImages(hf_splits(tmp_path)["train"], "img", None)
    assert np.array_equal(reader[np.array([17, 18])], images["train"][0][[17, 18]])
    assert (
        next(iter(reader._open.values()))[0] == 2
    )  # rows 17 and 18 lie in the third row group: only it was read
    copy = pickle.loads(pickle.dumps(reader))  # a DataLoader worker gets it without open tables
    assert copy._open == copy._row_groups == {} and np.array_equal(copy[40], images["train"][0][40])


def test_a_split_that_is_not_there_is_one_line(pillar, tmp_path, images):
    hf_dataset(images, datasets.ClassLabel(names=CLASSES)).save_to_disk(str(tmp_path / "d"))
    result = pillar(
        "embed",
        "--source",
        "hf",
        "--path",
        tmp_path / "d",
        "--param",
        "train=training",
        "-o",
        tmp_path / "e.h5",
        expect=None,
    )
    assert result.exit_code == 4 and result.stderr.splitlines() == [
        f"error: {tmp_path / 'd'} has no split 'training' (its splits: train, test)",
        "hint: name the training split with --param train=SPLIT",
    ]


def test_without_a_label_column_the_rows_are_to_classify_and_named_by_row_id(tmp_path, images):
    hf_dataset(images, datasets.ClassLabel(names=CLASSES))["test"].remove_columns("label").to_parquet(
        str(tmp_path / "train.parquet")
    )
    unlabelled = read_hf(tmp_path, None)
    assert not unlabelled.labelled and unlabelled.row_names().tolist() == list(range(20))
    assert np.array_equal(unlabelled.inputs[np.arange(20)], images["test"][0])
