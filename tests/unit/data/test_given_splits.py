"""A split named for each row by the holder (data/given_splits.py): read from a name,split CSV, a file of one
split a line or a .npy array; refused in one line where it misnames rows, splits a person or the source's own
test part, names no public row, or follows the labels."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.data.given_splits import declared_splits, each_rows_split
from pillar_cli.errors import DataError, UsageError

KEYS = np.array(["a.png", "b.png", "c.png", "d.png"], dtype=object)


def test_the_three_spellings_read_as_one_split_a_row(tmp_path):
    (tmp_path / "named.csv").write_text("name,split\nc.png,public\na.png,train\nd.png,TEST\nb.png,val\n")
    (tmp_path / "lines.txt").write_text("train\nval\npublic\ntest\n")
    np.save(tmp_path / "array.npy", np.array(["private", "val", "public", "test"]))
    expected = ["private", "val", "public", "test"]
    assert each_rows_split(tmp_path / "named.csv", KEYS, 4, "s").tolist() == expected
    assert each_rows_split(tmp_path / "lines.txt", None, 4, "s").tolist() == expected
    assert each_rows_split(tmp_path / "array.npy", None, 4, "s").tolist() == expected


@pytest.mark.parametrize(
    ("text", "keys", "said"),
    [
        ("a.png,train\nb.png,holdout\n", KEYS, r"f.csv, row 2: split 'holdout' is none of train, private,"),
        (
            "train\nval\n",
            None,
            r"f.csv lists 2 splits; source 's' has 4 rows \(its train part, then its test",
        ),
        (
            "a.png,train\nb.png,val\nc.png,test\nd.png,test\ne.png,val\n",
            KEYS,
            r"names 1 rows source 's' does not hold \(first: e.png\)$",
        ),
        ("a.png,train\nb.png,val\n", KEYS, r"names no split for 2 of the source's 4 rows \(first: c.png\)$"),
        ("a.png,train\na.png,val\n", KEYS, r"f.csv names the row a.png more than once$"),
    ],
)
def test_a_file_that_misnames_rows_is_one_line(tmp_path, text, keys, said):
    (tmp_path / "f.csv").write_text(text)
    with pytest.raises(DataError, match=said):
        each_rows_split(tmp_path / "f.csv", keys, 4, "s")


def test_a_named_file_needs_a_source_that_names_its_rows(tmp_path):
    (tmp_path / "f.csv").write_text("a.png,train\n")
    with pytest.raises(UsageError, match=r"source 's' does not name its rows: split_from .* must list one"):
        each_rows_split(tmp_path / "f.csv", None, 1, "s")


def splits(given, labels, **options):
    defaults = {"n_train": len(given), "persons": None, "file": "f.csv", "public_wanted": True}
    return declared_splits(
        np.array(given, dtype=object), np.array(labels), ["cat", "dog", "eel"], **defaults | options
    )


def test_declared_splits_are_the_rows_the_file_names():
    given = ["private", "public", "private", "val", "test", "public"]
    out = splits(given, [0, 0, 1, 1, 0, 1])
    assert {name: ids.tolist() for name, ids in out.items()} == {
        "private": [0, 2], "public": [1, 5], "val": [3], "test": [4],
    }  # fmt: skip


def test_splits_that_follow_the_labels_are_refused():
    """A split column that is the label (or puts a whole class outside the private split) lets a private
    row's label decide where it goes."""
    with pytest.raises(
        DataError, match=r"^f.csv names every row of class 'dog' test: a private row's label would"
    ):
        splits(["private", "public", "test", "test"], [0, 0, 1, 1])
    with pytest.raises(DataError, match=r"every row of class 'eel' public"):
        splits(["private", "public", "private", "public"], [0, 0, 1, 2])


def test_a_person_split_across_splits_a_test_part_moved_and_no_public_row_are_refused():
    with pytest.raises(DataError, match=r"puts the rows of 1 persons in more than one split \(first: p1\)"):
        splits(
            ["private", "public", "private", "public"],
            [0, 1, 0, 1],
            persons=np.array(["p0", "p1", "p1", "p2"]),
        )
    with pytest.raises(DataError, match=r"names 1 rows of the source's own test part otherwise than test"):
        splits(["private", "public", "val", "test"], [0, 1, 0, 1], n_train=2)
    with pytest.raises(
        UsageError, match=r"f.csv names no public row: nothing could be fitted without private"
    ):
        splits(["private", "val", "private", "val"], [0, 0, 1, 1])
    assert "public" not in splits(["private", "val", "private", "val"], [0, 0, 1, 1], public_wanted=False)
