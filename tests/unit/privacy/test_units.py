"""Units: every training row's unit of privacy as one value — each row its own, or the persons a grouping
names — from which a mechanism reads the count, each row's weight in a released sum and whether batches draw
persons."""

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
    with pytest.raises(
        DataError, match=r"^rows with persons joined to rows without: every row needs its person$"
    ):
        private.joined(Units.rows(2))


def test_a_person_column_of_the_wrong_length_and_bad_groups_are_one_line():
    with pytest.raises(DataError, match=r"^2 persons for 3 rows: every row needs its person$"):
        Units.of(np.array([0, 1]), 3)
    with pytest.raises(UsageError, match=r"^groups must hold one group id per row: 3 rows, \(2,\) ids$"):
        Units.given(["a", "b"], 3, "the groups given")
    given = Units.given(["b", "a", "b"], 3, "the groups given")
    assert given.count == 2 and given.named_by == "the groups given"
    assert not Units.given(None, 3, "the groups given").grouped


def test_the_guarantee_composes_the_upstream_releases_once_at_one_delta_total():
    """One composition path: a run's tree with a DP-PCA's Gaussian release is accounted at δ_run + δ_release,
    and ε is that of the composed tree by the run's accountant (dp-accounting)."""
    from pillar_cli.privacy import GaussianEvent, dp_sgd_event, spent_epsilon
    from pillar_cli.privacy.count import RowCount
    from pillar_cli.privacy.events import composed
    from pillar_cli.privacy.guarantee import Guarantee
    from pillar_cli.privacy.release import DPRelease, Released

    head = dp_sgd_event(2.0, 0.01, 300)
    pca = DPRelease(
        released=Released.PROJECTION,
        mechanism="DP-PCA",
        epsilon=0.5,
        delta=1e-6,
        event=GaussianEvent(8.0),
        unit=PrivacyUnit(),
    )
    alone = Guarantee(unit=PrivacyUnit(), count=RowCount.exact(1000), accountant="pld", delta=1e-5)
    assert alone.compose(head) == head and alone.delta_total == 1e-5
    assert alone.epsilon(head) == spent_epsilon("pld", head, 1e-5)
    with_pca = Guarantee(
        unit=PrivacyUnit(), count=RowCount.exact(1000), accountant="pld", delta=1e-5, upstream=(pca,)
    )
    assert with_pca.delta_total == pytest.approx(1.1e-5)
    assert with_pca.compose(head).to_dict() == composed(head, GaussianEvent(8.0)).to_dict()
    assert (
        with_pca.epsilon(with_pca.compose(head))
        == spent_epsilon("pld", composed(head, GaussianEvent(8.0)), 1.1e-5)
        > alone.epsilon(head)
    )


def test_a_target_is_met_by_the_whole_composition_and_a_release_that_leaves_nothing_is_refused():
    """The noise of a head resting on a DP-PCA and a pure-ε DP-GSD is calibrated so that the whole tree
    (count, head, releases) spends at most the target, recomputed by dp-accounting's PLD for the Gaussian
    part."""
    from dp_accounting import dp_event, pld

    from pillar_cli.errors import PrivacyError
    from pillar_cli.privacy import ExponentialEvent, GaussianEvent, dp_sgd_event
    from pillar_cli.privacy.count import NOISY, RowCount
    from pillar_cli.privacy.guarantee import Guarantee
    from pillar_cli.privacy.release import DPRelease, Released

    count = RowCount(3000.2, NOISY, 40.0, 0.05, (1.0, 1e-5))
    pca = DPRelease(
        released=Released.PROJECTION,
        mechanism="DP-PCA",
        epsilon=0.3,
        delta=1e-6,
        event=GaussianEvent(12.0),
        unit=PrivacyUnit(),
    )
    gsd = DPRelease(
        released=Released.PUBLIC_CHOICE,
        mechanism="Bingham",
        epsilon=0.2,
        delta=0.0,
        event=ExponentialEvent(0.2),
        unit=PrivacyUnit(),
    )
    guarantee = Guarantee(unit=PrivacyUnit(), count=count, accountant="pld", delta=1e-5, upstream=(pca, gsd))
    sigma = guarantee.noise(1.0, 0.05, 200)
    tree = guarantee.compose(dp_sgd_event(sigma, 0.05, 200))
    assert 0.98 <= guarantee.epsilon(tree) <= 1.0
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(40.0))
    accountant.compose(dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(sigma)), 200)
    accountant.compose(dp_event.GaussianDpEvent(12.0))
    assert 0.2 + accountant.get_epsilon(guarantee.delta_total) == pytest.approx(
        guarantee.epsilon(tree), rel=2e-3
    )
    with pytest.raises(
        PrivacyError,
        match=r"^the releases these heads rest on already spend ε = 0\.49\d* at δ = "
        r"1\.1e-05 \(DP-PCA; ε = 0\.3, δ = 1e-06; Bingham; ε = 0\.2, δ = 0\): no head fits within ε = 0\.4$",
    ):
        guarantee.noise(0.4, 0.05, 200)


def test_a_release_per_row_under_a_person_unit_and_an_unaccounted_relation_are_refused():
    from pillar_cli.errors import PrivacyError
    from pillar_cli.privacy import GaussianEvent
    from pillar_cli.privacy.guarantee import Guarantee
    from pillar_cli.privacy.relation import Relation
    from pillar_cli.privacy.release import DPRelease, Released

    gsd = DPRelease(
        released=Released.PUBLIC_CHOICE,
        mechanism="Analyze-Gauss",
        epsilon=1.0,
        delta=1e-5,
        event=GaussianEvent(4.0),
        unit=PrivacyUnit(),
    )
    with pytest.raises(
        PrivacyError,
        match=r"^the public choice's DP release protects one row, and these rows name their "
        "persons: heads protecting a person cannot rest on it$",
    ):
        Guarantee(
            unit=PrivacyUnit(PERSON, "column id"), count=None, accountant="prv", delta=1e-5, upstream=(gsd,)
        )
    with pytest.raises(PrivacyError, match=r"^pillar's accountants account add or remove one adjacency only"):
        Guarantee(unit=PrivacyUnit(), count=None, accountant="prv", delta=1e-5, relation=Relation.REPLACE_ONE)
