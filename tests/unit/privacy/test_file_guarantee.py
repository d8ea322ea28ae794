"""The guarantee of a file of many heads, against dp-accounting's own composition of the same mechanisms."""

from __future__ import annotations

import math

import pytest
from dp_accounting import dp_event, pld
from dp_accounting.rdp import RdpAccountant

from pillar_cli.privacy import ExponentialEvent, GaussianEvent, dp_sgd_event
from pillar_cli.privacy.file_guarantee import ReleasedHead, joint_epsilon, stream_segments, whole_file
from pillar_cli.randomness import SECRET, NoiseSource

DELTA = 1e-5


def _head(sigma: float, steps: int, batches: tuple | None, q: float = 0.1) -> ReleasedHead:
    return ReleasedHead(dp_sgd_event(sigma, q, steps), epsilon=1.0, batches=batches, delta=DELTA)


def _pld(events) -> float:
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    for event, count in events:
        accountant.compose(event, count)
    return accountant.get_epsilon(DELTA)


def _sampled(q: float, sigma: float):
    return dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma))


def test_heads_on_shared_batches_are_one_gaussian_per_step_of_their_joint_noise():
    heads = [_head(2.0, 100, ("b",)), _head(4.0, 50, ("b",))]
    # the first 50 steps carry both sums: noise multiplier (2⁻² + 4⁻²)^(-1/2); the last 50 only the first
    # head's
    assert stream_segments([(2.0, 0.1, 100), (4.0, 0.1, 50)]) == [
        (pytest.approx((1 / 4 + 1 / 16) ** -0.5), 0.1, 50),
        (2.0, 0.1, 50),
    ]
    expected = _pld([(_sampled(0.1, (1 / 4 + 1 / 16) ** -0.5), 50), (_sampled(0.1, 2.0), 50)])
    assert joint_epsilon(heads, DELTA)["epsilon"] == pytest.approx(expected, rel=0.01)


def test_heads_with_their_own_batches_compose_as_independent_mechanisms_and_cost_less_than_shared_ones():
    shared = joint_epsilon([_head(2.0, 100, ("b",)), _head(2.0, 100, ("b",))], DELTA)["epsilon"]
    independent = joint_epsilon([_head(2.0, 100, None), _head(2.0, 100, None)], DELTA)["epsilon"]
    assert independent == pytest.approx(_pld([(_sampled(0.1, 2.0), 200)]), rel=0.01)
    rdp = RdpAccountant()
    rdp.compose(_sampled(0.1, 2.0 / math.sqrt(2)), 100)
    assert shared == pytest.approx(
        min(rdp.get_epsilon(DELTA), _pld([(_sampled(0.1, 2.0 / math.sqrt(2)), 100)])), rel=0.01
    )
    assert independent < shared


def test_one_head_is_its_own_guarantee_and_an_upstream_release_composes_once_into_many():
    head = _head(2.0, 100, ("b",))
    assert joint_epsilon([head], DELTA) | {"composition": ""} == {
        "epsilon": 1.0,
        "delta": DELTA,
        "composition": "",
    }
    heads = [_head(2.0, 100, None), _head(2.0, 100, None)]
    with_pca = joint_epsilon(heads, DELTA, upstream=(GaussianEvent(6.0),))
    assert with_pca["epsilon"] == pytest.approx(
        _pld([(_sampled(0.1, 2.0), 200), (dp_event.GaussianDpEvent(6.0), 1)]), rel=0.01
    )
    assert (
        with_pca["epsilon"] > joint_epsilon(heads, DELTA)["epsilon"]
        and "1 upstream" in with_pca["composition"]
    )
    with_gsd = joint_epsilon(heads, DELTA, upstream=(ExponentialEvent(0.25),))
    assert with_gsd["epsilon"] == pytest.approx(joint_epsilon(heads, DELTA)["epsilon"] + 0.25)


def test_a_non_private_head_or_reproducible_noise_leaves_the_file_without_a_guarantee():
    assert joint_epsilon([_head(2.0, 10, None), _head(0.0, 10, None)], DELTA)["epsilon"] == math.inf
    record = whole_file([_head(2.0, 10, None)], DELTA, NoiseSource(5).reproducible)
    assert record["epsilon"] == math.inf and "NOT differentially private" in record["composition"]
    record = whole_file([_head(2.0, 10, None)], DELTA, SECRET.reproducible)
    assert record["heads"] == 1 and record["statement"].endswith("its one head together: ε = 1 at δ = 1e-05")
