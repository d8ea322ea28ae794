"""Persons in the data (data/groups.py): sources name each row's person, and the keyed splits draw persons
whole — no person's rows in two splits, and deleting one person moves no other."""

from __future__ import annotations

import numpy as np
import pytest
from medical import write_dicom
from PIL import Image

from pillar_cli.data import Dataset, SourceOptions, SplitPlan, load_source, make_splits
from pillar_cli.data.groups import Groups
from pillar_cli.data.keys import SPLIT, keyed_draws, named_keys
from pillar_cli.data.splits import split_draws
from pillar_cli.errors import DataError, UsageError


def _rows_of_persons(persons: np.ndarray, n_test: int = 0) -> Dataset:
    """One distinct vector a row, each row's person named by `persons` (train part, then an own test part)."""
    x = np.random.default_rng(1).standard_normal((len(persons), 2)).astype(np.float32)
    y, n = np.arange(len(persons)) % 2, len(persons) - n_test
    test = (x[n:], y[n:]) if n_test else (None, None)
    return Dataset(
        "rows", x[:n], y[:n], ["a", "b"], *test, groups=Groups.of(persons.astype(str), "test", "test")
    )


def test_with_persons_a_persons_rows_share_its_draw_and_no_person_has_rows_in_two_splits():
    rng = np.random.default_rng(0)
    persons = rng.permutation(np.repeat(np.arange(400), rng.integers(1, 31, 400)))  # 1 to 30 rows a person
    data, plan = _rows_of_persons(persons), SplitPlan(0.1, 0.1, 0.2, seed=5)
    splits = make_splits(data, plan)
    assert sorted(np.concatenate(list(splits.values())).tolist()) == list(
        range(len(persons))
    )  # every row, once
    owners = {name: set(persons[rows].tolist()) for name, rows in splits.items()}
    for a in owners:
        for b in owners:
            assert a == b or not owners[a] & owners[b]
    test_persons = len(owners["test"])  # persons are drawn, each with probability 0.2: binomial over 400
    assert abs(test_persons - 0.2 * 400) < 4 * np.sqrt(400 * 0.2 * 0.8)
    draws = split_draws(data, plan.seed)  # a person's draw is the keyed draw of its id
    np.testing.assert_array_equal(
        draws, keyed_draws(named_keys(persons.astype(str).tolist()), plan.seed, SPLIT)
    )


def test_deleting_one_person_moves_no_other_persons_rows():
    persons = np.repeat(np.arange(120), 3)
    data = _rows_of_persons(persons)
    before = make_splits(data, SplitPlan(0.2, 0.1, 0.2))
    gone = np.flatnonzero(persons == persons[before["private"][0]])
    after = make_splits(data.without(gone), SplitPlan(0.2, 0.1, 0.2))
    survivors = np.delete(np.arange(len(persons)), gone)
    for name in before:
        assert np.array_equal(np.setdiff1d(before[name], gone), survivors[after[name]]), name


def test_a_person_in_both_the_train_and_the_test_part_is_refused():
    with pytest.raises(DataError, match=r"^2 persons have rows in both the source's train and test parts"):
        make_splits(_rows_of_persons(np.array([0, 1, 2, 3, 0, 1, 7]), n_test=3), SplitPlan(0.1))


def test_array_sources_name_persons_by_a_groups_array(tmp_path):
    x, y = np.random.default_rng(0).standard_normal((6, 3)), np.array([0, 1, 0, 1, 0, 1])
    np.savez(tmp_path / "a.npz", x=x, y=y, groups=np.array(["p1", "p2", "p1", "p3", "p2", "p3"]))
    dataset = load_source("npz", SourceOptions(tmp_path / "a.npz"))
    assert dataset.groups.source == "array groups" and dataset.groups.persons.tolist() == [0, 1, 0, 2, 1, 2]
    np.savez(tmp_path / "b.npz", x=x, y=y, groups=np.arange(5))
    with pytest.raises(DataError, match=r"'groups' holds \(5,\) ids for 6 rows; one group id per row$"):
        load_source("npz", SourceOptions(tmp_path / "b.npz"))
    np.savez(tmp_path / "c.npz", x=x, y=y, x_test=x, y_test=y, groups=np.arange(6))
    with pytest.raises(DataError, match=r"has 'groups' but no 'groups_test' for its x_test rows$"):
        load_source("npz", SourceOptions(tmp_path / "c.npz"))
    with pytest.raises(DataError, match=r"^a column: row 1 has no group id; every row needs its person$"):
        Groups.of(["p1", None, "p2"], "column patient", "a column")  # a null in a dataset's column


def _images(folder, names):
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((4, 4), 100, np.uint8)).save(folder / name)


def test_a_manifest_column_or_a_csv_mapping_names_the_persons_of_image_files(tmp_path):
    _images(tmp_path, ["a/1.png", "a/2.png", "b/3.png"])
    (tmp_path / "m.csv").write_text("path,label,PatientID\na/1.png,x,P7\na/2.png,x,P9\nb/3.png,y,P7\n")
    dataset = load_source("manifest", SourceOptions(tmp_path / "m.csv"))
    assert dataset.groups.source == "column PatientID" and dataset.groups.ids.tolist() == ["P7", "P9", "P7"]
    (tmp_path / "persons.csv").write_text("file,group\na/1.png,p1\n2.png,p2\nb/3.png,p1\n")
    folder = load_source("image-folder", SourceOptions(tmp_path, {"groups": str(tmp_path / "persons.csv")}))
    assert folder.groups.source == "file persons.csv" and folder.groups.ids.tolist() == ["p1", "p2", "p1"]
    (tmp_path / "short.csv").write_text("a/1.png,p1\n")
    with pytest.raises(DataError, match=r"short.csv names no group for a/2.png$"):
        load_source("image-folder", SourceOptions(tmp_path, {"groups": str(tmp_path / "short.csv")}))
    with pytest.raises(
        UsageError, match=r"names each row's person in a column; params groups= would name them twice$"
    ):
        load_source("manifest", SourceOptions(tmp_path / "m.csv", {"groups": str(tmp_path / "persons.csv")}))
    # once: the last row won
    (tmp_path / "twice.csv").write_text("a/1.png,p1\na/2.png,p2\nb/3.png,p1\na/1.png,p3\n")
    with pytest.raises(
        DataError, match=r"twice.csv names a/1.png twice, as p1 and as p3: a file is one person's$"
    ):
        load_source("image-folder", SourceOptions(tmp_path, {"groups": str(tmp_path / "twice.csv")}))


def test_dicom_files_name_their_patient(tmp_path):
    pytest.importorskip("pydicom")
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
    for i, patient in enumerate(["A", "B", "A", "C"]):
        write_dicom(
            tmp_path / ("x" if i % 2 else "y") / f"{i}.dcm", np.full((4, 4), 100 * i), patient=patient
        )
    dataset = load_source("dicom", SourceOptions(tmp_path))
    assert dataset.groups.source == "DICOM PatientID"
    by_file = {
        file.split("/")[-1]: patient for file, patient in zip(dataset.inputs.files, dataset.groups.ids)
    }
    assert by_file == {"0.dcm": "A", "1.dcm": "B", "2.dcm": "A", "3.dcm": "C"}


def test_too_few_persons_for_a_public_split_are_named_as_the_cause_not_the_fractions():
    """Two persons of 40 rows each: whole persons are drawn, and with neither drawn public the message says
    so."""
    data = _rows_of_persons(np.repeat([0, 1], 40))
    missing = [
        seed
        for seed in range(50)
        if "public" not in make_splits(data, SplitPlan(0.1, 0.1, 0.2, seed=seed, no_public_split=True))
    ]
    with pytest.raises(
        UsageError,
        match=r"^none of the 2 persons the source names drew the public split \(each "
        r"person's rows go to one split, drawn at public_fraction 0.1\): nothing "
        r"could be fitted without private data$",
    ):
        make_splits(data, SplitPlan(0.1, 0.1, 0.2, seed=missing[0]))
