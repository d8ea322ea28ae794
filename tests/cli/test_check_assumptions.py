"""pillar check-assumptions in theory mode on Example 1 of the paper: ξ_k is small from k = 2."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_example_1_has_small_xi_from_k_2_in_theory_mode(pillar, tmp_path):
    emb = tmp_path / "gmm.h5"
    pillar(
        "embed",
        "--source",
        "synthetic-gmm",
        "--param",
        "n=6000",
        "--param",
        "d=30",
        "--param",
        "mu_norm=2",
        "--param",
        "theta=9",
        "--param",
        "sigma=0.3",
        "-o",
        emb,
    )
    result = pillar(
        "check-assumptions",
        f"{emb}:private",
        "--second-moment",
        "--k",
        "1,2,5",
        "--mode",
        "ovr",
        "--eps",
        "1",
        "--allow-private-labels",
        "-o",
        tmp_path / "a.h5",
        "--json",
    )
    summary = json.loads(result.stdout)
    by_k = {row["k"]: row for row in summary["rows"]}
    assert (
        by_k[1]["xi_max"] > 0.5
    )  # the top public direction is the high-variance w, not the margin direction μ
    assert by_k[2]["xi_max"] <= 0.05 and by_k[5]["xi_max"] <= 0.05
    assert summary["recommended_k"] == 2 and summary["recommended_k_theorem"] == 2
    assert (
        summary["basis"].startswith("second moment") and "labels of split 'private'" in summary["labels_used"]
    )
    assert summary["private_labels_used"] and "PRIVATE labels (allowed explicitly" in summary["labels_used"]
