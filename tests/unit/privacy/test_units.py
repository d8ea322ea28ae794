"""Units: every training row's unit of privacy as one value — each row its own, or the persons a grouping names —
from which a mechanism reads the count, each row's weight in a released sum and whether batches draw persons."""

from __future__ import annotations

import numpy as np
import pytest

from pillar_cli.errors import DataError, UsageError
from pillar_cli.privacy.unit import PERSON, ROW, PrivacyUnit, Units


def test_rows_are_each_their_own_unit_and_persons_weigh_one_row_together():
    rows = Units.rows(4)
    assert not rows.grouped and rows.count == 4 and rows.weights.tolist() == [1, 1, 1, 1]
    persons = Units.of(np.array([7, 7, 3, 7]), 4, "column PatientID")
    assert persons.grouped and persons.named_by == "column PatientID" and persons.count == 2
    assert persons.weights.tolist() == pytest.approx([1 / 3, 1 / 3, 1.0, 1 / 3])
    assert Units.of(None, 3).ids.tolist() == [0, 1, 2] and not Units.of(None, 3).grouped


def test_a_mechanism_bounds_the_persons_only_where_the_person_is_the_unit():
    persons = Units.of(np.array([0, 0, 1]), 3, "the groups given")
    assert persons.bounded_by(PrivacyUnit(PERSON, "the groups given")) is persons
    per_row = persons.bounded_by(PrivacyUnit(ROW))
    assert not per_row.grouped and per_row.count == 3


def test_rows_taken_and_splits_joined_keep_each_persons_id():
    """A file numbers its source's persons once: a person keeps their id in every split, so splits compare."""
    private, val = Units.of(np.array([4, 4, 9]), 3, "x"), Units.of(np.array([4, 2]), 2, "x")
    joined = private.joined(val)
    assert joined.ids.tolist() == [4, 4, 9, 4, 2] and joined.count == 3
    assert private.take(np.array([2, 0])).ids.tolist() == [9, 4]
    assert Units.rows(2).joined(Units.rows(3)).count == 5
    with pytest.raises(DataError, match="^rows with persons joined to rows without: every row needs its person$"):
        private.joined(Units.rows(2))


def test_a_person_column_of_the_wrong_length_and_bad_groups_are_one_line():
    with pytest.raises(DataError, match="^2 persons for 3 rows: every row needs its person$"):
        Units.of(np.array([0, 1]), 3)
    with pytest.raises(UsageError, match="^groups must hold one group id per row: 3 rows, \\(2,\\) ids$"):
        Units.given(["a", "b"], 3, "the groups given")
    given = Units.given(["b", "a", "b"], 3, "the groups given")
    assert given.count == 2 and given.named_by == "the groups given"
    assert not Units.given(None, 3, "the groups given").grouped


def test_the_guarantee_composes_the_upstream_releases_once_at_one_delta_total():
    """One composition path: a run's tree with a DP-PCA's Gaussian release is accounted at δ_run + δ_release, and ε
    is that of the composed tree by the run's accountant (dp-accounting)."""
    from pillar_cli.privacy import GaussianEvent, dp_sgd_event, spent_epsilon
    from pillar_cli.privacy.count import RowCount
    from pillar_cli.privacy.events import composed
    from pillar_cli.privacy.guarantee import DPRelease, Guarantee

    head = dp_sgd_event(2.0, 0.01, 300)
    pca = DPRelease.of({"epsilon": 0.5, "delta": 1e-6, "event": GaussianEvent(8.0).to_dict()})
    spent = spent_epsilon("pld", head, 1e-5)
    alone = Guarantee(PrivacyUnit(), RowCount.exact(1000), "pld", 1e-5)
    assert alone.compose(head, spent) == (head, spent) and alone.delta_total == 1e-5
    with_pca = Guarantee(PrivacyUnit(), RowCount.exact(1000), "pld", 1e-5, (pca,))
    event, epsilon = with_pca.compose(head, spent)
    assert with_pca.delta_total == pytest.approx(1.1e-5)
    assert epsilon == spent_epsilon("pld", composed(head, GaussianEvent(8.0)), 1.1e-5) > spent
    assert event.to_dict() == composed(head, GaussianEvent(8.0)).to_dict()
