"""Accounted selection on real digits: one trial is the plain run, only the released runs are kept, their ε is
what dp-accounting computes from the stored events, and what cannot be selected privately is refused."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.rdp import RdpAccountant
from sklearn.datasets import load_digits

from pillar_cli import AccountedSelection, PublicPCA, UsageError, sweep
from pillar_cli.linear.engine import RunConfig, train_linear_heads
from pillar_cli.methods.accounted import PERSON_SCORE, _draw_trials
from pillar_cli.methods.base import Cell
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.methods.sweep import sweep_artifact
from pillar_cli.privacy import event_from_dict, gaussian_segments
from pillar_cli.privacy.count import release_count
from pillar_cli.privacy.rdp import ORDERS, TrialCount
from pillar_cli.privacy.selection import plan_selection, recorded_selection_epsilon
from pillar_cli.privacy.unit import person_weights
from pillar_cli.randomness import NoiseSource


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(1).permutation(len(x))
    public, private, val = order[:300], order[300:1300], order[1300:1600]
    return PublicPCA(30).fit(x[public]), x[public], x[private], y[private], x[val], y[val]


def run(digits, **options):
    pca, public, x, y, xv, yv = digits
    defaults = {
        "projection": pca,
        "public": public,
        "k": [10],
        "epsilon": [1.0],
        "delta": 1e-4,
        "lr": [0.5, 2.0],
        "steps": [50],
        "batch_size": [200],
        "seed": [0, 1],
        "device": "cpu",
        "select": "accounted",
    }
    return sweep(x, y, xv, yv, **{**defaults, **options})


def test_one_trial_releases_the_plain_run(digits):
    pca, _, x, y, _, _ = digits
    selection = AccountedSelection(trials=1.0, shape=1.0)
    result = run(digits, seed=[3], select=selection, noise_seed=5)  # reproducible, so that it can be replayed
    (released,) = result.runs
    candidates = [RunConfig(lr, 50, 200, 3) for lr in (0.5, 2.0)]
    data = SweepData(pca, x.astype(np.float32), y, None, None, 10)
    cell = Cell(data, pca, 10, 1.0, candidates, PrivacySettings(1e-4, noise=NoiseSource(5)), "fast", "cpu")
    rng = cell.randomness.child("trials", 3).numpy()
    ((candidate, trial),) = _draw_trials(rng, candidates, TrialCount(1.0, 1.0))
    # the sweep's count, from the same (seeded) source
    count = release_count(len(x), 1.0, 1e-4, NoiseSource(5))
    assert result.count == count and count.value != len(x)
    rate = count.sample_rate(200)
    plan = plan_selection(1.0, 1e-4, TrialCount(1.0, 1.0), 0.3, {(rate, 50)}, count.event)
    (head,) = train_linear_heads(
        pca.transform(x.astype(np.float32), 10),
        y,
        10,
        [trial],
        [plan.training[rate, 50]],
        1.0,
        device="cpu",
        noise=cell.randomness,
        count=count,
    )
    np.testing.assert_array_equal(released.head.weights, head.weights)
    assert (released.key.lr, released.key.seed) == (candidate.lr, 3)
    assert released.event == count.with_count(plan.event) and released.epsilon_spent == plan.epsilon <= 1.0


def test_only_released_runs_are_kept_and_their_epsilon_is_dp_accountings(digits):
    result = run(digits, epsilon=[0.5, math.inf])
    private = [r for r in result.runs if math.isfinite(r.key.epsilon)]
    assert len(private) == 2 and len([r for r in result.runs if math.isinf(r.key.epsilon)]) == 4
    artifact = sweep_artifact(result, digits[0], PrivacySettings(1e-4), 10, 1000)
    assert artifact.attrs["selection_mode"] == "accounted"
    ledger = artifact.attrs["selection_ledger"]
    assert ledger["orders"] == ORDERS.tolist() and len(ledger["selections"]) == 2
    for record, released in zip(ledger["selections"], private):
        # the row count's release, then the selection
        counted, selection = event_from_dict(record["event"]).events
        one_of, score = selection.event.events  # repeat-and-select of (one of, score)
        (mechanism,) = one_of.events  # the candidates differ in lr only
        ((sigma, rate, steps),) = gaussian_segments(mechanism)
        assert counted == result.count.event and (rate, steps) == (200 / result.count.value, 50)
        trial = dp_event.ComposedDpEvent(
            [
                dp_event.SelfComposedDpEvent(
                    dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), steps
                ),
                dp_event.GaussianDpEvent(score.noise_multiplier),
            ]
        )
        accountant = RdpAccountant(orders=ledger["orders"])
        accountant.compose(dp_event.GaussianDpEvent(counted.noise_multiplier))
        count = record["trial_count"]
        assert count["distribution"] == "geometric" and "trials_drawn" not in record  # K stays hidden
        accountant.compose(dp_event.RepeatAndSelectDpEvent(trial, count["mean"], count["shape"]))
        reference = accountant.get_epsilon(record["delta"])
        assert released.epsilon_spent == pytest.approx(reference, rel=1e-9) and reference <= 0.5
        assert recorded_selection_epsilon(record) == pytest.approx(reference, rel=1e-9)
    chosen = {(c.k, c.epsilon): c for c in result.selection}
    assert chosen[10, 0.5].selected == "in ε" and len(chosen[10, 0.5].run_ids) == 2
    assert chosen[10, math.inf].selected == "on val, outside ε" and len(chosen[10, math.inf].run_ids) == 2


def test_selection_spends_less_per_trial_than_a_plain_run(digits):
    """The price of accounting: at the same total ε, a trial's training noise is larger than the plain
    run's."""
    plain = run(digits, select="val", seed=[0])
    accounted = run(digits, seed=[0])
    one_of, _score = accounted.runs[0].released.event.event.events  # repeat-and-select of (one of, the score)
    (candidate,) = one_of.events  # the candidates differ in lr only: one mechanism
    ((trial_sigma, _, _),) = gaussian_segments(candidate)
    ((plain_sigma, _, _),) = gaussian_segments(plain.runs[0].released.event)
    assert trial_sigma > 1.3 * plain_sigma


def test_what_cannot_be_selected_privately_is_refused(digits):
    with pytest.raises(
        UsageError, match=r"^select accounted needs a private cell with at least two configurations"
    ):
        run(digits, lr=[0.5])
    with pytest.raises(UsageError, match=r"^select accounted cannot wrap method 'noisy-sgd'"):
        run(digits, method=["noisy-sgd"], steps=[100, 200])
    pca, _, x, y, _, _ = digits
    with pytest.raises(
        UsageError, match=r"^select accounted scores its trials on the val split, which is missing$"
    ):
        sweep(
            x,
            y,
            projection=pca,
            k=[10],
            lr=[0.5, 2.0],
            steps=[50],
            batch_size=[200],
            delta=1e-4,
            select="accounted",
        )
    with pytest.raises(UsageError, match=r"^score_share must be in \(0, 1\) \(got 0.0\)$"):
        AccountedSelection(score_share=0.0)
    with pytest.raises(UsageError, match=r"^unknown select 'best' "):
        run(digits, select="best")
    assert replace(AccountedSelection(), trials=2.0).count(5).mean == 2.0


def test_poisson_with_no_trial_releases_nothing(digits):
    """Poisson(1) trials: a seed draws none with probability 1/e; its selection is in the ledger, no run is
    released, and no record says how many trials any selection drew."""
    result = run(
        digits, select=AccountedSelection(trials=1.0, shape=math.inf), seed=list(range(8)), noise_seed=1
    )
    assert len(result.selection_ledger) == 8 and 0 < len(result.runs) < 8
    assert not any("trials_drawn" in record for record in result.selection_ledger)


def test_per_person_each_val_person_weighs_one_and_a_person_of_one_row_is_a_row(digits):
    """Persons of one row each, same experiment-only noise: the person unit releases the row unit's heads (to
    the rounding of its own summation order) and scores; persons of 4 rows make the score a weighted one, said
    so in the ledger; val rows without their persons are refused."""
    _, _, x, _y, xv, _yv = digits
    rows = run(digits, seed=[3], noise_seed=5)
    persons = run(digits, seed=[3], noise_seed=5, groups=np.arange(len(x)), groups_val=np.arange(len(xv)))
    assert persons.plan.unit.is_person and not rows.plan.unit.is_person
    for row, person in zip(rows.runs, persons.runs, strict=True):  # the person engine sums in another order
        np.testing.assert_allclose(row.head.weights, person.head.weights, rtol=1e-5, atol=1e-6)
        assert row.val_accuracy == person.val_accuracy and row.epsilon_spent == person.epsilon_spent
    grouped = run(digits, seed=[3], groups=np.arange(len(x)) // 4, groups_val=np.arange(len(xv)) // 4)
    (record,) = grouped.selection_ledger
    assert record["trial"]["score"]["statistic"] == PERSON_SCORE and grouped.runs[0].epsilon_spent <= 1.0
    with pytest.raises(
        UsageError,
        match=r"^select accounted with the person as the privacy unit weights each val row "
        "by its person: groups_val must name the val rows' persons$",
    ):
        run(digits, groups=np.arange(len(x)) // 4)


def test_one_person_moves_a_weighted_val_score_by_at_most_one():
    rng = np.random.default_rng(0)
    persons = np.repeat(np.arange(40), rng.integers(1, 30, size=40))
    correct = rng.random(len(persons)) < 0.7
    weights = person_weights(persons)
    for person in range(40):
        kept = persons != person
        assert abs(weights @ correct - person_weights(persons[kept]) @ correct[kept]) <= 1 + 1e-12
