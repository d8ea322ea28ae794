"""The neighbouring-datasets check's rule and readers: a value that repeats on each side and differs between
them is reported, a value that noise moves is not, and every shipped format is read down to its leaves."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from pillar_cli.audit import neighbours as neighbours_module
from pillar_cli.audit.neighbours import NeighbourPlan, Removed, deterministic_differences, neighbours
from pillar_cli.audit.stored_values import stored_values
from pillar_cli.errors import UsageError


def test_only_values_fixed_on_each_side_and_different_between_them_are_reported():
    # each side's runs written within one second, the sides in different seconds: the clock is not the data's
    with_row = [
        {"q": "0.1422", "noise": "0.31", "k": "19", "attrs/created_at": "10:00:00"},
        {"q": "0.1422", "noise": "-1.2", "k": "19", "attrs/created_at": "10:00:00"},
    ]
    without_row = [
        {"q": "0.1423", "noise": "0.07", "k": "19", "attrs/created_at": "10:00:01"},
        {"q": "0.1423", "noise": "2.5", "k": "19", "attrs/created_at": "10:00:01"},
    ]
    (finding,) = deterministic_differences("rel.h5", with_row, without_row)
    assert (finding.file, finding.value, finding.with_row, finding.without_row) == (
        "rel.h5",
        "q",
        "0.1422",
        "0.1423",
    )
    shifting = [{"k": "19"}, {"k": "20"}]  # a coarse DP output that repeats on one side only: not reported
    assert deterministic_differences("rel.h5", shifting, [{"k": "18"}, {"k": "18"}]) == []
    assert (
        deterministic_differences("rel.h5", [{"a": "1"}, {"a": "1"}], [{}, {}])[0].without_row == "(absent)"
    )
    missing = deterministic_differences("rel.onnx", [{"a": "1"}, {"a": "1"}], [None, None])
    assert [(f.value, f.with_row, f.without_row) for f in missing] == [("(the file itself)", "True", "False")]


def test_stored_values_reach_json_leaves_and_digest_arrays(tmp_path):
    path = tmp_path / "rel.h5"
    with h5py.File(path, "w") as h5:
        h5.attrs["privacy"] = json.dumps({"event": {"sample_rate": 0.14, "count": 113}, "covers": ["a", "b"]})
        h5.attrs["pillar_kind"] = "classifier"
        h5.create_dataset("weights", data=np.arange(6, dtype=np.float32).reshape(3, 2))
    values = stored_values(path)
    assert values["attrs/privacy/event/sample_rate"] == "0.14" and values["attrs/privacy/covers/1"] == "'b'"
    assert values["attrs/pillar_kind"] == "'classifier'" and values["datasets/weights"].startswith(
        "float32[3, 2]"
    )
    from safetensors.numpy import save_file

    save_file(
        {"bias": np.ones(3, np.float32)},
        str(tmp_path / "rel.safetensors"),
        metadata={"pillar_privacy": json.dumps({"epsilon": 0.995})},
    )
    values = stored_values(tmp_path / "rel.safetensors")
    assert values["metadata/pillar_privacy/epsilon"] == "0.995" and values["tensors/bias"].startswith(
        "float32[3]"
    )
    with pytest.raises(UsageError, match="not a file the neighbours check can read"):
        (tmp_path / "notes.txt").write_text("x")
        stored_values(tmp_path / "notes.txt")


def test_a_plan_needs_two_runs_a_side_and_known_formats():
    with pytest.raises(UsageError, match=r"^runs must be at least 2"):
        NeighbourPlan(runs=1)
    with pytest.raises(
        UsageError, match=r"^unknown export format 'pdf' \(known: onnx, torchscript, safetensors, hf\)$"
    ):
        NeighbourPlan(formats=["pdf"])


def test_what_the_first_runs_find_is_confirmed_by_more_runs_a_side(tmp_path, monkeypatch):
    """A k that noise sets to 35 or 36 repeated 35, 35 with the record and 36, 36 without it: the 3 more runs
    a side clear it; a value fixed on each side is found in all 5. Where the first runs find nothing, no run
    is added."""
    values = {"with": iter(["35", "35", "36", "35", "36"]), "without": iter(["36"] * 5)}

    def pipeline(directory, plan, number):
        return {"rel.h5": {"head/k": next(values[directory.name]), "sample_rate": directory.name}}

    monkeypatch.setattr(neighbours_module, "_pipeline", pipeline)
    monkeypatch.setattr(neighbours_module, "records_to_remove", lambda *args: Removed([3], "8", "the record"))
    monkeypatch.setattr(neighbours_module.artifacts, "read", lambda *args, **kwargs: None)
    found = neighbours(tmp_path / "emb.h5", NeighbourPlan(runs=2), tmp_path, embed=lambda rows, target: None)
    assert found.runs == 5 and [(f.value, f.with_row, f.without_row) for f in found.findings] == [
        ("sample_rate", "with", "without")
    ]
    values = {"with": iter(["35", "36"]), "without": iter(["36", "36"])}
    monkeypatch.setattr(
        neighbours_module,
        "_pipeline",
        lambda directory, plan, number: {"rel.h5": {"head/k": next(values[directory.name])}},
    )
    found = neighbours(tmp_path / "emb.h5", NeighbourPlan(runs=2), tmp_path, embed=lambda rows, target: None)
    assert found.runs == 2 and found.findings == []
