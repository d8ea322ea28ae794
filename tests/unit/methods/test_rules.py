"""The default rule's values and the per-ε grids it makes."""

from __future__ import annotations

import math

import pytest
from sklearn.datasets import load_digits

from pillar_cli import DPLinearClassifier, sweep
from pillar_cli.errors import UsageError
from pillar_cli.methods.grid import SweepGrid
from pillar_cli.methods.rules import rule_k, rule_lr, rule_steps, ruled_grids
from pillar_cli.privacy.count import RowCount


def test_rule_values():
    assert [rule_k(3200, eps, 100) for eps in (0.1, 1.0, 3.0, 10.0, math.inf)] == [18, 57, 98, 100, 100]
    assert rule_k(10, 0.01, 100) == 2
    assert [rule_steps(n, 512) for n in (1000, 3200, 45000)] == [100, 100, 1407]
    assert [rule_lr(3200, eps, 512) for eps in (0.1, 1.0, math.inf)] == pytest.approx([0.1, 1.0, 2.0])
    assert rule_lr(1000, 1.0, 512) == pytest.approx(0.3125)  # the step floor: lr·steps stays n·ε/32
    assert rule_lr(45000, 1.0, 1024) == pytest.approx(1.0 * 45000 / 32 / 704)  # about ε·B/512 above the floor


def test_ruled_grids_fill_only_the_named_fields_per_epsilon():
    grid = SweepGrid(
        methods=["pillar"],
        ks=[],
        epsilons=[0.1, 1.0],
        lrs=[0.3],
        seeds=[0, 1],
        rules=frozenset({"k", "steps"}),
    ).for_rows(RowCount.exact(3200))
    first, second = ruled_grids(grid, 100)
    assert (first.ks, first.lrs, first.steps, first.epsilons) == ([18], [0.3], [100], [0.1])
    assert (second.ks, second.steps, second.epsilons, second.rules) == ([57], [100], [1.0], frozenset())
    plain = SweepGrid(methods=["pillar"], ks=[5], epsilons=[1.0], lrs=[0.1], seeds=[0]).for_rows(
        RowCount.exact(3200)
    )
    assert ruled_grids(plain, 100) == [plain]


def test_a_method_with_its_own_step_rule_keeps_it():
    grid = SweepGrid(
        methods=["noisy-sgd"], ks=[], epsilons=[1.0], lrs=[], seeds=[0], rules=frozenset({"k", "lr", "steps"})
    ).for_rows(RowCount.exact(400))
    (planned,) = ruled_grids(grid, 50)
    assert planned.steps is None and planned.ks == [20]
    mixed = SweepGrid(
        methods=["pillar", "dp-fc", "noisy-sgd"],
        ks=[],
        epsilons=[1.0],
        lrs=[],
        seeds=[0],
        rules=frozenset({"k", "lr", "steps"}),
    ).for_rows(RowCount.exact(3200))
    rule, own = ruled_grids(mixed, 100)  # the rule's steps for DP-SGD beside methods with their own
    assert (rule.methods, rule.steps, own.methods, own.steps) == (
        ["pillar"],
        [100],
        ["dp-fc", "noisy-sgd"],
        None,
    )


def test_the_grid_must_be_set_for_its_rows():
    with pytest.raises(ValueError, match="for_rows"):
        ruled_grids(
            SweepGrid(methods=["pillar"], ks=[], epsilons=[1.0], lrs=[], seeds=[0], rules=frozenset({"k"})),
            100,
        )


def test_the_python_api_follows_the_rule_by_default():
    """DPLinearClassifier() and sweep() leave k, lr and steps to the rule, as train-private does; "auto" names
    it, given values replace it field by field, and any other word is refused."""
    x, y = load_digits(return_X_y=True)
    public, x, y = x[:400], x[400:1400], y[400:1400]
    clf = DPLinearClassifier(epsilon=1.0, delta=1e-4, device="cpu").fit(x, y, public=public)
    count = clf.ledger_.count.value  # the rule reads the count released inside ε, not n = 1000
    assert (clf.k_, clf.ledger_.steps) == (rule_k(count, 1.0, 64), rule_steps(count, 512))
    declared = DPLinearClassifier(epsilon=1.0, delta=1e-4, device="cpu", n_public=True).fit(
        x, y, public=public
    )
    assert (
        (declared.k_, declared.ledger_.steps) == (rule_k(1000, 1.0, 64), rule_steps(1000, 512)) == (32, 100)
    )
    result = sweep(x, y, public=public, epsilon=[0.5, 1.0], lr=[0.2], delta=1e-4, device="cpu")
    count = result.count.value
    keys = sorted((run.key.epsilon, run.key.k, run.key.lr, run.key.steps) for run in result.runs)
    assert keys == [(0.5, rule_k(count, 0.5, 64), 0.2, 100), (1.0, rule_k(count, 1.0, 64), 0.2, 100)]
    with pytest.raises(UsageError, match=r"^k takes a list of values or 'auto'; got 'best'$"):
        sweep(x, y, public=public, k="best")
