"""Labels as users hold them become class indices with the names they had, or one clear refusal."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.data import SourceOptions, load_source
from pillar_cli.data.labels import ClassSource, encode_labels, parse_class_names
from pillar_cli.errors import DataError, UsageError


@pytest.mark.parametrize(
    "train, test, codes, names",
    [
        (
            np.array(["dog", "cat", "dog"]),
            np.array(["eel", "cat"]),
            ([1, 0, 1], [2, 0]),
            ["cat", "dog", "eel"],
        ),
        (np.array([-1, 1, 1]), np.array([-1]), ([0, 1, 1], [0]), ["-1", "+1"]),
        (np.array([1000, 7, 7]), np.array([1000]), ([1, 0, 0], [1]), ["7", "1000"]),
        (np.array([2.0, 0.0, 1.0]), np.array([2.0]), ([2, 0, 1], [2]), ["0", "1", "2"]),
        (np.array([True, False]), np.array([True]), ([1, 0], [1]), ["0", "1"]),
        (np.array([b"b", b"a"], dtype=object), np.array([b"a"], dtype=object), ([1, 0], [0]), ["a", "b"]),
        (
            np.array(["10", "2", "1"]),
            np.array(["2"]),
            ([2, 1, 0], [1]),
            ["1", "2", "10"],
        ),  # numbers written as text
    ],
)
def test_labels_become_indices_over_all_parts_with_their_names(train, test, codes, names):
    (train_codes, test_codes), found = encode_labels("y.npz", train, test)
    assert found == names
    assert train_codes.tolist() == codes[0] and test_codes.tolist() == codes[1]
    assert train_codes.dtype == np.int64


@pytest.mark.parametrize(
    "labels, message",
    [
        (np.array([0.5, 1.5]), "labels of y.npz must be integers or strings: row 0 holds 0.5"),
        (np.array([1.0, np.nan]), "labels of y.npz must be integers or strings: row 1 holds nan"),
        (np.array(["1", "nan"]), "labels of y.npz must be integers or strings: row 1 holds nan"),
        (np.array([1 + 2j]), "labels of y.npz must be integers or strings, not complex128"),
        (np.array([], dtype=np.int64), "y.npz holds no labels"),
    ],
)
def test_labels_that_name_no_class_are_refused(labels, message):
    with pytest.raises(DataError) as caught:
        encode_labels("y.npz", labels)
    assert str(caught.value) == message


def test_array_and_csv_sources_keep_class_names(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3)).astype(np.float32)
    np.savez(
        tmp_path / "pets.npz", x=x, y=np.array(["cat", "dog"] * 3), x_test=x[:2], y_test=np.array(["dog"] * 2)
    )
    dataset = load_source("npz", SourceOptions(path=tmp_path / "pets.npz"))
    assert dataset.class_names == ["cat", "dog"]
    assert dataset.labels.tolist() == [0, 1] * 3 and dataset.test_labels.tolist() == [1, 1]
    (tmp_path / "pets.csv").write_text(
        "a,b,animal\n" + "".join(f"{i},{i / 2},{'dog' if i % 3 else 'cat'}\n" for i in range(6))
    )
    dataset = load_source("csv", SourceOptions(path=tmp_path / "pets.csv"))
    assert dataset.class_names == ["cat", "dog"] and dataset.labels.tolist() == [0, 1, 1, 0, 1, 1]


def test_a_test_part_with_another_number_of_labels_is_refused(tmp_path):
    np.savez(
        tmp_path / "a.npz", x=np.zeros((4, 2)), y=np.arange(4), x_test=np.zeros((3, 2)), y_test=np.arange(2)
    )
    with pytest.raises(DataError) as caught:
        load_source("npz", SourceOptions(path=tmp_path / "a.npz"))
    assert str(caught.value) == "source 'npz' has 3 test inputs but 2 test labels"


def _pets(tmp_path, **arrays) -> SourceOptions:
    x = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    np.savez(tmp_path / "pets.npz", x=x, **arrays)
    return SourceOptions(path=tmp_path / "pets.npz")


def test_a_source_that_declares_no_classes_is_refused_until_they_are_declared(tmp_path):
    dataset = load_source("npz", _pets(tmp_path, y=np.array(["cat", "dog"] * 3)))
    assert dataset.class_source == ClassSource.LABELS
    with pytest.raises(DataError) as caught:
        dataset.with_declared_classes(None)
    assert str(caught.value) == (
        "source 'pets' does not declare its classes, and classes read from the labels "
        "would follow the private rows: a label only they hold would add a class to every head"
    )
    declared = dataset.with_declared_classes(["dog", "cat", "eel"])  # the user's order; a class no row holds
    assert declared.class_names == ["dog", "cat", "eel"] and declared.labels.tolist() == [1, 0] * 3
    assert declared.class_source == ClassSource.USER
    assert dataset.with_declared_classes(None, from_labels=True).class_source == ClassSource.LABELS


def test_a_label_outside_the_declared_classes_is_one_line(tmp_path):
    dataset = load_source("npz", _pets(tmp_path, y=np.array(["cat", "dog", "cat", "dog", "cat", "yak"])))
    with pytest.raises(DataError) as caught:
        dataset.with_declared_classes(["cat", "dog"])
    assert str(caught.value) == "source 'pets': label 'yak' is not one of the 2 declared classes (cat, dog)"
    with pytest.raises(
        UsageError,
        match=r"^classes declares the classes; classes_from_labels=True would read them from the labels: "
        r"pass one$",
    ):
        dataset.with_declared_classes(["cat", "dog"], from_labels=True)


def test_an_array_file_declares_its_classes_by_a_class_names_array(tmp_path):
    named = load_source(
        "npz",
        _pets(tmp_path, y=np.array([0, 1, 0, 1, 0, 2]), class_names=np.array(["cat", "dog", "eel", "rare"])),
    )
    assert named.class_source == ClassSource.SOURCE and named.class_names == ["cat", "dog", "eel", "rare"]
    assert named.labels.tolist() == [0, 1, 0, 1, 0, 2]  # integer labels: positions among the declared names
    by_name = load_source(
        "npz", _pets(tmp_path, y=np.array(["dog"] * 6), class_names=np.array(["cat", "dog"]))
    )
    assert by_name.labels.tolist() == [1] * 6
    numbered = load_source(
        "npz", _pets(tmp_path, y=np.array([-1, 1] * 3), class_names=np.array(["-1", "+1"]))
    )
    assert numbered.labels.tolist() == [0, 1] * 3  # numeric names: labels name them by value
    with pytest.raises(DataError) as caught:
        load_source("npz", _pets(tmp_path, y=np.arange(6), class_names=np.array(["cat", "dog"])))
    assert str(caught.value).endswith("pets.npz: label 2 is no position among the 2 declared classes")


@pytest.mark.parametrize("text, names", [("a,b", ["a", "b"]), (" cat , dog ,eel", ["cat", "dog", "eel"])])
def test_class_names_are_parsed_from_a_list_or_a_file(tmp_path, text, names):
    assert parse_class_names(text) == names
    (tmp_path / "classes.txt").write_text("\n".join(names) + "\n")
    assert parse_class_names(str(tmp_path / "classes.txt")) == names
    with pytest.raises(UsageError, match=r"^classes needs two or more distinct class names"):
        parse_class_names("a,a")
