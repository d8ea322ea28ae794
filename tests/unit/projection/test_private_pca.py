"""DP-PCA (Analyze Gauss on unit rows): without noise the exact second-moment PCA; with noise its subspace
closes in on the exact one as ε grows; the release's ε is the accountant's for one Gaussian release."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dp_accounting import dp_event, pld
from sklearn.datasets import load_digits

from pillar_cli import DPLinearClassifier, PrivacyError, PublicPCA, UsageError, sweep
from pillar_cli.privacy.events import to_dp_accounting
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.unit import Units
from pillar_cli.projection.private_pca import fit_private_pca
from pillar_cli.randomness import SECRET


def _subspace_distance(a: np.ndarray, b: np.ndarray) -> float:
    """‖P_a − P_b‖_F / √(2k) of two (k, D) orthonormal row bases: 0 for one subspace, 1 for orthogonal
    ones."""
    return float(np.linalg.norm(a.T @ a - b.T @ b) / math.sqrt(2 * len(a)))


@pytest.fixture(scope="module")
def rows() -> np.ndarray:
    return load_digits().data


def test_without_noise_it_is_the_exact_second_moment_pca(rows):
    exact = PublicPCA(10, standardize=False, second_moment=True).fit(rows)
    private, release = fit_private_pca(rows, 10, math.inf, 1e-5, "prv", SECRET)
    np.testing.assert_allclose(private.components_, exact.components_, atol=1e-8)
    np.testing.assert_allclose(private.transform(rows, 10), exact.transform(rows, 10), atol=1e-6)
    assert math.isinf(release["epsilon"]) and private.n_public_ == 0  # no row count recorded


def test_its_subspace_closes_in_on_the_exact_one_as_epsilon_grows(rows):
    exact = PublicPCA(10, standardize=False, second_moment=True).fit(rows).components_
    distance = {
        epsilon: np.mean(
            [
                _subspace_distance(
                    fit_private_pca(rows, 10, epsilon, 1e-5, "prv", SECRET)[0].components_, exact
                )
                for _ in range(5)
            ]
        )
        for epsilon in (0.1, 1.0, 10.0)
    }
    assert distance[0.1] > distance[1.0] > distance[10.0] and distance[10.0] < 0.2, distance


def test_the_release_spends_what_dp_accounting_says(rows):
    _, release = fit_private_pca(rows, 5, 0.5, 1e-5, "pld", SECRET)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(dp_event.GaussianDpEvent(release["event"]["noise_multiplier"]))
    assert release["epsilon"] == pytest.approx(accountant.get_epsilon(1e-5), rel=2e-3)
    assert release["epsilon"] <= 0.5 * (1 + 1e-9) and release["noise"]["reproducible"] is False


def test_bad_budgets_and_sizes_are_refused(rows):
    with pytest.raises(UsageError, match=r"^epsilon must be > 0 \(got 0.0\)"):
        fit_private_pca(rows, 5, 0.0, 1e-5, "prv", SECRET)
    with pytest.raises(
        UsageError, match=r"^k_max must be between 1 and the feature dimension 64 \(got 65\)$"
    ):
        fit_private_pca(rows, 65, 1.0, 1e-5, "prv", SECRET)


def test_the_python_api_composes_a_dp_pca_into_the_heads_epsilon(rows):
    """DPLinearClassifier and sweep() on a DP-PCA object: the ε target is met by the whole tree (the row
    count, the training, the projection's release) at δ plus the release's — dp-accounting's ε of that tree —
    and the ledger says what it covers; the head's own noise is larger than it would be on a public
    projection."""
    labels = load_digits().target
    pca, release = fit_private_pca(rows[:1400], 20, 0.5, 1e-5, "pld", SECRET)
    settings = {
        "k": 10,
        "epsilon": 1.0,
        "accountant": "pld",
        "lr": 0.5,
        "steps": 100,
        "batch_size": 256,
        "device": "cpu",
        "delta": 1e-5,
    }
    clf = DPLinearClassifier(projection=pca, **settings).fit(rows[:1400], labels[:1400])
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(to_dp_accounting(clf.ledger_.event))
    assert clf.ledger_.delta == pytest.approx(2e-5) and 0.98 <= clf.ledger_.epsilon_spent <= 1.0
    assert clf.ledger_.epsilon_spent == pytest.approx(accountant.get_epsilon(2e-5), rel=2e-3)
    assert "fitting the projection on the private rows (Analyze Gauss" in clf.ledger_.covers
    assert (
        clf.ledger_.guarantee.upstream == (pca.release_,)
        and pca.release_.event == clf.ledger_.event.events[-1]
    )
    public = DPLinearClassifier(projection=PublicPCA(20).fit(rows[1400:]), **settings).fit(
        rows[:1400], labels[:1400]
    )
    assert (
        clf.ledger_.noise_multiplier > public.ledger_.noise_multiplier
    )  # the release takes part of the budget
    result = sweep(
        rows[:1400],
        labels[:1400],
        projection=pca,
        k=[10],
        epsilon=[1.0],
        accountant="pld",
        lr=[0.5],
        steps=[100],
        batch_size=[256],
        device="cpu",
    )
    assert result.releases == (pca.release_,) and result.runs[0].epsilon_spent <= 1.0
    assert pca.release_ == DPRelease.from_attrs(release)


def test_with_persons_each_row_weighs_one_over_its_persons_rows_and_the_release_names_the_unit(rows):
    persons = np.random.default_rng(0).integers(0, 60, len(rows))
    private, release = fit_private_pca(
        rows, 10, math.inf, 1e-5, "prv", SECRET, Units.of(persons, len(rows), "column PatientID")
    )
    units = rows / np.linalg.norm(rows, axis=1, keepdims=True)
    weights = 1.0 / np.bincount(persons)[persons]
    values, vectors = np.linalg.eigh((units * weights[:, None]).T @ units)
    top = vectors[:, np.argsort(values)[::-1][:10]].T
    assert _subspace_distance(private.components_, top) < 1e-8
    assert release["unit"]["unit"] == "person" and release["unit"]["persons"] == "column PatientID"
    assert "each row weighted by 1/(its person's rows)" in release["mechanism"]
    # one person moves the weighted sum by at most 1 in Frobenius norm (the sensitivity the noise is
    # calibrated to)
    for person in range(5):
        mine = persons == person
        assert np.linalg.norm((units[mine] * weights[mine, None]).T @ units[mine]) <= 1 + 1e-12


def test_heads_protecting_a_person_cannot_rest_on_a_projection_released_per_row(rows):
    labels = load_digits().target
    projection, _ = fit_private_pca(rows[:1000], 20, 1.0, 1e-5, "prv", SECRET)  # per row: no persons
    groups = np.arange(len(rows) - 1000) // 4
    with pytest.raises(
        PrivacyError, match=r"^the projection's DP release protects one row, and these rows name"
    ):
        DPLinearClassifier(projection=projection, epsilon=1.0, delta=1e-4).fit(
            rows[1000:], labels[1000:], groups=groups
        )
    per_row = DPLinearClassifier(projection=projection, epsilon=1.0, delta=1e-4, privacy_unit="row")
    assert not per_row.fit(rows[1000:], labels[1000:], groups=groups).ledger_.unit.is_person


def test_the_dp_pca_estimator_is_the_release_with_a_typed_record_and_scikit_learns_contract(rows):
    """DPPCA(...).fit(X): the same projection as the release (exact at ε = inf), its record typed as a
    DPRelease (the ε spent ≤ its target, the Gaussian event, the unit), cloneable, and composed into a head's
    ε."""
    from sklearn.base import clone

    from pillar_cli import DPPCA
    from pillar_cli.privacy import GaussianEvent

    exact, _ = fit_private_pca(rows, 10, math.inf, 1e-5, "prv", SECRET)
    np.testing.assert_array_equal(DPPCA(10, epsilon=math.inf).fit(rows).components_, exact.components_)
    fitted = DPPCA(20, epsilon=0.5, accountant="pld").fit(rows[:1400])
    release = fitted.release_
    assert isinstance(release, DPRelease) and isinstance(release.event, GaussianEvent)
    assert release.epsilon <= 0.5 and release.delta == 1e-5 and not release.unit.is_person
    assert release.released == Released.PROJECTION and release.mechanism.startswith("Analyze Gauss")
    assert DPRelease.from_attrs(release.to_attrs()) == release
    assert clone(fitted).get_params() == {
        "k_max": 20,
        "epsilon": 0.5,
        "delta": 1e-5,
        "accountant": "pld",
        "noise_seed": None,
    }
    persons = DPPCA(10, epsilon=1.0).fit(rows, groups=np.arange(len(rows)) // 3).release_
    assert persons.unit.is_person and persons.unit.persons == "the groups given"
    labels = load_digits().target
    result = sweep(
        rows[:1400],
        labels[:1400],
        projection=fitted,
        k=[10],
        epsilon=[1.0],
        accountant="pld",
        lr=[0.5],
        steps=[100],
        batch_size=[256],
        device="cpu",
    )
    assert result.releases == (fitted.release_,) and result.runs[0].epsilon_spent <= 1.0
