"""The request is checked once against its declared constraints, whoever builds it; a preview plan (made from
the exact number of rows, to be printed) can never train."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import PublicPCA
from pillar_cli.errors import UsageError
from pillar_cli.methods.data import SweepData
from pillar_cli.methods.plan import plan_sweep
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.sweep import run_plan


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
    ],
)
def test_a_request_breaking_a_declared_constraint_is_refused_when_built(field, value, message):
    with pytest.raises(UsageError) as refused:
        SweepRequest(**{field: value})
    assert str(refused.value) == message


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
