"""The one-run audit with canaries that are persons of 16 identical rows: a head trained with the person as
the unit keeps the bound below its claimed ε; trained with the row as the unit, the same audit finds more than
the per-row ε claims — which is why a per-row guarantee does not protect a person. Both ways a head bounds a
person are audited: DP-SGD's sum of clipped gradients clipped again, and a full-batch head's rows weighted by
1/(their person's rows)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli.audit.canaries import AuditSettings, run_audit
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.projection import PublicPCA


@pytest.mark.parametrize(
    "method, config", [("pillar", RunConfig(2.0, 300, 256, 0)), ("dp-newton", RunConfig(0.0, 3, 0, 0))]
)  # clipped sums; weighted rows
def test_a_canary_person_stays_below_epsilon_only_where_the_person_is_the_unit(method, config):
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    data = SweepData(PublicPCA(30).fit(x[:300]), x[300:], y[300:], None, None, 10)
    results = {
        unit: run_audit(
            get_method(method),
            data,
            20,
            2.0,
            config,
            PrivacySettings(delta=1e-5),
            AuditSettings(canaries=400, guesses=100, rows_per_canary=16, unit=unit),
        )
        for unit in ("person", "row")
    }
    assert max(result.epsilon_claimed for result in results.values()) < 2.0
    assert results["person"].epsilon_lower_bound < results["person"].epsilon_claimed
    # 16 rows: about 16·ε per person. The bound passes 2.0 at 185 of 200 correct guesses; 38 runs of pillar
    # found 194-200, 10 of dp-newton 196-199
    assert results["row"].epsilon_lower_bound > results["row"].epsilon_claimed
