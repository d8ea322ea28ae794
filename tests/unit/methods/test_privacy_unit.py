"""The privacy unit in the Python API: groups given to `fit` or `sweep` make the person the unit (the count is
of persons, the ledger names the unit); a person unit without groups, or val rows without their persons, is
refused."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli import DPLinearClassifier, UsageError, sweep


def test_groups_make_the_person_the_unit_and_the_count_one_of_persons(digits):
    _, public, x, y = digits
    groups = np.arange(len(x)) // 5  # persons of 5 rows
    clf = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=50).fit(x, y, public=public, groups=groups)
    assert clf.ledger_.unit.is_person and clf.ledger_.unit.persons == "the groups given to fit"
    assert "per person: each row's gradient clipped to C, then the sum of each person's" in clf.ledger_.covers
    count = clf.ledger_.count
    assert (
        count.of == "persons" and count.noisy and abs(count.value - len(x) / 5) < 6 * count.noise_multiplier
    )
    per_row = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=50).fit(x, y, public=public)
    assert not per_row.ledger_.unit.is_person and per_row.ledger_.count.of == "training rows"
    with pytest.raises(UsageError, match=r"^privacy_unit person needs each training row's person"):
        DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, privacy_unit="person").fit(x, y, public=public)
    with pytest.raises(UsageError, match=r"^groups must hold one group id per row"):
        DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4).fit(x, y, public=public, groups=groups[:-1])


def test_val_rows_that_train_need_their_persons(digits):
    pca, _, x, y = digits
    val_x, val_y, x, y = x[:100], y[:100], x[100:], y[100:]
    with pytest.raises(UsageError, match=r"^groups_val must name the persons of the val rows"):
        sweep(x, y, val_x, val_y, projection=pca, epsilon=[1.0], delta=1e-4, groups=np.arange(len(x)) // 4)
    result = sweep(
        x,
        y,
        val_x,
        val_y,
        projection=pca,
        epsilon=[1.0],
        delta=1e-4,
        groups=np.arange(len(x)) // 4,
        groups_val=1000 + np.arange(100) // 4,
    )
    assert result.plan.unit.is_person and result.count.of == "persons"


def test_a_person_with_rows_in_x_and_x_val_is_one_person_when_the_val_rows_train(digits):
    """Group ids are numbered over X and X_val together: patient 'p7' in both is one person of the count (as
    a file's persons are, numbered over its source), and two patients are never merged by their positions."""
    pca, _, x, y = digits
    val_x, val_y, x, y = x[:100], y[:100], x[100:], y[100:]
    names = np.array([f"p{i}" for i in range(len(x) // 4 + 1)])
    groups, groups_val = names[np.arange(len(x)) // 4], names[np.arange(100) // 4]  # p0..p24 in both
    result = sweep(
        x, y, val_x, val_y, projection=pca, epsilon=[1.0], groups=groups, groups_val=groups_val, n_public=True
    )
    assert result.count.of == "persons" and result.count.value == len(set(groups) | set(groups_val))
    apart = sweep(
        x,
        y,
        val_x,
        val_y,
        projection=pca,
        epsilon=[1.0],
        groups=groups,
        groups_val=np.char.add("v", groups_val),
        n_public=True,
    )
    assert apart.count.value == len(set(groups)) + len(set(groups_val))


def test_a_split_read_from_a_file_brings_its_persons_and_row_must_be_asked_for_by_name(digits, tmp_path):
    """Its features alone would drop the persons it records: fit on them protected each row, without a
    word."""
    from pillar_cli import DPPCA, read_split
    from pillar_cli.artifacts import write
    from pillar_cli.artifacts.embeddings import embeddings_artifact

    _, public, x, y = digits
    persons = np.arange(len(x)) // 5
    splits = {
        "private": (x, np.arange(len(x)), y, persons),
        "public": (public, len(x) + np.arange(len(public)), None, None),
    }
    write(tmp_path / "e.h5", embeddings_artifact(splits, {"class_names": [str(c) for c in range(10)]}))
    private, public_split = (
        read_split(f"{tmp_path / 'e.h5'}:private"),
        read_split(f"{tmp_path / 'e.h5'}:public"),
    )
    clf = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=50).fit(private, public=public_split)
    assert clf.ledger_.unit.is_person and clf.ledger_.count.of == "persons"
    per_row = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=50, privacy_unit="row").fit(
        private, public=public
    )
    assert not per_row.ledger_.unit.is_person and per_row.ledger_.count.of == "training rows"
    assert DPPCA(k_max=10, epsilon=1.0, delta=1e-4).fit(private).release_.unit.is_person
    with pytest.raises(
        UsageError,
        match=r"^groups given with a split \(private\): the split brings its own labels "
        r"and persons$",
    ):
        DPLinearClassifier(k=10, epsilon=1.0).fit(private, groups=persons, public=public)
    with pytest.raises(UsageError, match=r"^the split public holds no labels: train on a labelled split"):
        DPLinearClassifier(k=10, epsilon=1.0).fit(public_split, public=public)
