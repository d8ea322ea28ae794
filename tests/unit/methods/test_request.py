"""The request is checked once against its declared constraints, whoever builds it; a preview plan (made from
the exact number of rows, to be printed) can never train."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA
from pillar_cli.errors import UsageError
from pillar_cli.methods.constraints import CONSTRAINTS
from pillar_cli.methods.data import SweepData
from pillar_cli.methods.plan import plan_sweep
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_plan
from pillar_cli.privacy.basis import ChosenBy, StatementBasis


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("clip", 0.0, "clip must be a positive number (got 0.0)"),
        ("momentum", 1.0, "momentum must be in [0, 1) (got 1.0)"),
        ("weight_decay", -1.0, "weight_decay must be a number ≥ 0 (got -1.0)"),
        ("engine", "jax", "unknown engine 'jax' (known: fast, opacus)"),
        ("val", "maybe", "unknown val 'maybe' (known: auto, train, hold-out)"),
        ("select", "best", "unknown select 'best' (known: val, accounted)"),
        ("seed", [1, 1], "seed lists 1 twice: each value names one run of the grid"),
        ("method", ["pillar", "magic"], "unknown method 'magic' (known: "),
        ("k", [5, 0], "k takes whole numbers ≥ 1 (got 0)"),
        ("k", "some", "k takes a list of values or 'auto'; got 'some'"),
        ("epsilon", [1.0, -1.0], "epsilon must be > 0 (got -1.0); use 'inf' for non-private training"),
        ("accountant", "moments", "unknown accountant 'moments' (known: "),
        (
            "lr",
            [0.5, 2e4],
            "lr must be at most 10,000 (got 20000): steps that large leave the head's float32",
        ),
        ("steps", [10, 2.5], "steps takes whole numbers ≥ 1 (got 2.5)"),
        ("batch_size", [0], "batch_size takes whole numbers ≥ 1 (got 0)"),
        ("seed", [-1], "seed takes whole numbers ≥ 0 (got -1)"),
        ("ridge", [None, 0.0], "ridge must be a positive number (got 0.0)"),
        ("device", 3, "device must be a device name (auto, cpu, cuda, cuda:1, …) (got 3)"),
        ("shard", (2, 2), "shard must be i/n with 0 ≤ i < n (got 2/2)"),
        ("noise_seed", 1.5, "noise_seed takes whole numbers ≥ 0 (got 1.5)"),
        ("n_public", "yes", "n_public must be True or False (got 'yes')"),
        ("count_share", 1.0, "count_share must be in (0, 1) (got 1.0)"),
        ("max_tpr", "high", "max_tpr must be a number (got 'high')"),
        ("at_fpr", 0.0, "at_fpr must be in (0, 1) (got 0.0)"),
    ],
)
def test_a_request_breaking_a_declared_constraint_is_refused_when_built(field, value, message):
    with pytest.raises(UsageError) as refused:
        SweepRequest(**{field: value})
    said = str(refused.value)
    assert said == message or (message.endswith(("(known: ", "float32")) and said.startswith(message))


def test_every_field_of_the_request_declares_its_constraint():
    assert {f.name for f in dataclasses.fields(SweepRequest)} == set(CONSTRAINTS)


def test_lists_become_tuples_and_method_options_their_defaults():
    request = SweepRequest(method=["pillar"], epsilon=[0.1, 1.0], seed=range(3))
    assert (request.epsilon, request.seed) == ((0.1, 1.0), (0, 1, 2))
    assert request == SweepRequest(method=("pillar",), epsilon=(0.1, 1.0), seed=(0, 1, 2), method_options={})


def test_a_preview_plan_never_trains():
    x, y = load_digits(return_X_y=True)
    data = SweepData(PublicPCA(20).fit(x[:300]), x[300:].astype(np.float32), y[300:], None, None, 10)
    plan = plan_sweep(data, SweepRequest(epsilon=[1.0], device="cpu"), preview=True)
    assert plan.count.value == len(data.private_x)  # the exact n: for the data holder's eyes only
    with pytest.raises(ValueError, match="a preview plan"):
        run_plan(data, plan)


def test_the_default_delta_follows_the_released_count_so_a_large_dataset_needs_no_flag():
    """δ left out is 1e-5, or 0.1/ñ where that is smaller: a plan of 300,000 rows (more than 1/1e-5) trains at
    δ = 0.1/ñ of its released count instead of refusing δ ≥ 1/ñ, and says so; 1,497 digits keep 1e-5; a δ
    given is kept."""
    rng = np.random.default_rng(0)
    large = rng.standard_normal((300_000, 4)).astype(np.float32)
    labels = (large[:, 0] > 0).astype(np.int64)
    data = SweepData(PublicPCA(4).fit(rng.standard_normal((500, 4))), large, labels, None, None, 2)
    plan = plan_sweep(data, SweepRequest(epsilon=[1.0], k=[2], lr=[0.5], steps=[10], device="cpu"))
    assert plan.count.noisy and plan.guarantee.delta == pytest.approx(0.1 / plan.count.value)
    assert plan.guarantee.delta_by_count and plan.privacy.delta == plan.guarantee.delta < 1 / plan.count.value
    basis = StatementBasis(
        trained_on=("private",), mechanism="", rule=None, selected=ChosenBy.NOTHING, cells=1
    )
    assert (
        f"choosing δ = {plan.guarantee.delta:.3g}: the default, 1e-05 or 0.1/ñ, whichever is smaller, "
        "read off the released count ñ" in plan.guarantee.words(basis)[0]
    )
    given = plan_sweep(
        data, SweepRequest(epsilon=[1.0], k=[2], lr=[0.5], steps=[10], delta=1e-7, device="cpu")
    )
    assert given.guarantee.delta == 1e-7 and not given.guarantee.delta_by_count
    x, y = load_digits(return_X_y=True)
    small = SweepData(PublicPCA(20).fit(x[:300]), x[300:].astype(np.float32), y[300:], None, None, 10)
    assert plan_sweep(small, SweepRequest(epsilon=[1.0], device="cpu")).guarantee.delta == 1e-5
