"""DP events as values: JSON round-trips, dp-accounting's own events, and every accountant applied to a tree
against a direct computation."""

from __future__ import annotations

import json
import math

import pytest
from dp_accounting import dp_event, pld
from dp_accounting.rdp import RdpAccountant

from pillar_cli import UsageError
from pillar_cli.privacy import (
    ExponentialEvent,
    GaussianEvent,
    composed,
    dp_sgd_event,
    event_from_dict,
    spent_epsilon,
)
from pillar_cli.privacy.events import (
    ComposedEvent,
    OneOfEvent,
    RepeatAndSelectEvent,
    SelfComposedEvent,
    gaussian_segments,
    headline,
    is_private,
    pure_parts,
    to_dp_accounting,
)

DELTA = 1e-5


def test_every_kind_of_event_round_trips_through_json():
    trial = composed(OneOfEvent((dp_sgd_event(3.0, 0.1, 100), dp_sgd_event(2.0, 1.0, 1))), GaussianEvent(9.0))
    tree = composed(
        RepeatAndSelectEvent(trial, 4.0, math.inf),
        ExponentialEvent(0.2),
        SelfComposedEvent(dp_sgd_event(5.0, 0.01, 7), 3),
    )
    assert event_from_dict(json.loads(json.dumps(tree.to_dict()))) == tree
    assert tree.to_dict()["events"][1] == {"type": "exponential", "epsilon": 0.2}
    with pytest.raises(UsageError, match=r"^unknown DP event 'laplace' \(known: gaussian, exponential, "):
        event_from_dict({"type": "laplace", "scale": 1.0})


def test_a_dp_sgd_run_is_one_segment_and_self_composition_multiplies_its_steps():
    assert dp_sgd_event(2.0, 0.1, 300) == SelfComposedEvent(dp_event_free := dp_sgd_event(2.0, 0.1, 1), 300)
    assert gaussian_segments(dp_event_free) == [(2.0, 0.1, 1)]
    assert gaussian_segments(SelfComposedEvent(dp_sgd_event(2.0, 0.1, 300), 3)) == [(2.0, 0.1, 900)]
    assert dp_sgd_event(2.0, 1.0, 1) == GaussianEvent(2.0) and headline(GaussianEvent(2.0)) == (2.0, 1.0)
    assert math.isnan(headline(ExponentialEvent(1.0))[0])
    assert composed(GaussianEvent(1.0)) == GaussianEvent(1.0)
    assert composed(composed(GaussianEvent(1.0), GaussianEvent(2.0)), GaussianEvent(3.0)) == ComposedEvent(
        (GaussianEvent(1.0), GaussianEvent(2.0), GaussianEvent(3.0))
    )


def test_each_accountant_composes_segments_as_the_direct_computation():
    one, two = dp_sgd_event(1.5, 0.05, 200), dp_sgd_event(1.5, 0.05, 400)
    # μ-GDP composes as the root of the sum of squares: two equal segments are one of twice the steps
    assert spent_epsilon("gdp", composed(one, one), DELTA) == pytest.approx(
        spent_epsilon("gdp", two, DELTA), rel=1e-12
    )
    # RDP adds order by order: exactly the run of twice the steps
    assert spent_epsilon("rdp", composed(one, one), DELTA) == pytest.approx(
        spent_epsilon("rdp", two, DELTA), rel=1e-12
    )
    assert spent_epsilon("prv", composed(one, one), DELTA) == pytest.approx(
        spent_epsilon("prv", two, DELTA), rel=0.01
    )
    mixed = composed(one, GaussianEvent(4.0))
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(
        dp_event.ComposedDpEvent(
            [
                dp_event.SelfComposedDpEvent(
                    dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(1.5)), 200
                ),
                dp_event.GaussianDpEvent(4.0),
            ]
        )
    )
    assert spent_epsilon("pld", mixed, DELTA) == pytest.approx(accountant.get_epsilon(DELTA), rel=1e-3)


def test_exponential_mechanisms_add_their_epsilon_and_non_private_parts_leave_no_guarantee():
    run = dp_sgd_event(1.5, 0.05, 200)
    for name in ("prv", "rdp", "pld", "gdp"):
        assert spent_epsilon(name, ExponentialEvent(0.3), DELTA) == 0.3
        assert spent_epsilon(name, composed(run, ExponentialEvent(0.3)), DELTA) == pytest.approx(
            spent_epsilon(name, run, DELTA) + 0.3, rel=1e-12
        )
        assert spent_epsilon(name, composed(run, dp_sgd_event(0.0, 0.05, 10)), DELTA) == math.inf
        assert spent_epsilon(name, ExponentialEvent(math.inf), DELTA) == math.inf
    assert not is_private(RepeatAndSelectEvent(OneOfEvent((GaussianEvent(0.0),)), 2.0, 1.0))


def test_trees_convert_to_dp_accountings_events():
    tree = composed(dp_sgd_event(1.5, 0.05, 200), GaussianEvent(4.0))
    assert to_dp_accounting(tree) == dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.05, dp_event.GaussianDpEvent(1.5)), 200
            ),
            dp_event.GaussianDpEvent(4.0),
        ]
    )
    assert to_dp_accounting(GaussianEvent(0.0)) == dp_event.NonPrivateDpEvent()
    assert pure_parts(composed(tree, ExponentialEvent(0.3), ExponentialEvent(0.2))) == (0.5, tree)
    assert pure_parts(ExponentialEvent(0.3)) == (0.3, None)
    rdp = RdpAccountant()
    rdp.compose(to_dp_accounting(RepeatAndSelectEvent(GaussianEvent(3.0), 2.0, 1.0)))
    assert rdp.get_epsilon(DELTA) > 0
    for event in (OneOfEvent((GaussianEvent(1.0),)), ExponentialEvent(1.0)):
        with pytest.raises(UsageError, match=f"^dp-accounting has no event for '{event.kind}'$"):
            to_dp_accounting(event)
