"""Files edited by someone who wants a guard to let private data through: links that make one split pass for
another, and provenance (outside the content hash) rewritten to vouch for a projection of private rows."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy, snapshot

from pillar_cli import artifacts
from pillar_cli.artifacts.gsd import gsd_artifact
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.accountants import computed_epsilon

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

LINKS = {
    "hard": (
        lambda h5: h5["splits"].__setitem__("val2", h5["splits/private"]),
        "reaches /splits/private by 2 hard links: a pillar artifact holds no links",
    ),
    "soft": (
        lambda h5: h5["splits"].__setitem__("val2", h5py.SoftLink("/splits/private")),
        "holds a soft link at /splits/val2: a pillar artifact holds no links",
    ),
    "dangling": (
        lambda h5: h5["splits"].__setitem__("val2", h5py.SoftLink("/nowhere")),
        "holds a soft link at /splits/val2: a pillar artifact holds no links",
    ),
    "external": (
        lambda h5: h5["splits"].__setitem__("val2", h5py.ExternalLink("other.h5", "/splits/private")),
        "holds an external link at /splits/val2: a pillar artifact holds no links",
    ),
}


@pytest.mark.parametrize("link", sorted(LINKS))
def test_a_link_cannot_make_the_private_split_pass_for_another(pillar, mnist, tmp_path, link):
    """`val2 → private` would let check-assumptions read private labels as val labels and gsd take private
    rows as public ones; the content hash follows no link, so it still matched. Every reader refuses the
    file."""
    add_link, message = LINKS[link]
    linked = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], linked) as h5:  # restamped: the hash is what a careless check would trust
        add_link(h5)
    before = snapshot(tmp_path)
    out = tmp_path / "out.h5"
    for command in (
        ["check-assumptions", f"{linked}:val2", "-p", mnist["pca"], "-o", out],
        ["gsd", "--private", mnist["emb"], "--public", f"{linked}:val2", "-o", out],
        ["fit-pca", f"{linked}:public", "-o", out],
        ["inspect", linked],
    ):
        assert_clean_failure(pillar(*command, expect=None), 3, f"{linked} {message}", out)
    assert snapshot(tmp_path) == before


def test_rewritten_provenance_does_not_vouch_for_private_rows(pillar, mnist, tmp_path):
    """A projection fitted on another split seed's public rows (some of them private rows of these
    embeddings), whose recorded inputs are rewritten to name these embeddings. Edited alone, the provenance no
    longer matches its record hash; re-hashed (anyone can), it must still not vouch: the row-overlap check
    runs on the rows the projection records, whatever its provenance says."""
    other, projection, forged = tmp_path / "seed1.h5", tmp_path / "pca1.h5", tmp_path / "forged.h5"
    pillar("embed", "--source", "mnist5k", "--seed", "1", "-o", other)
    pillar("fit-pca", f"{other}:public", "--k-max", "20", "-o", projection)
    with h5py.File(mnist["emb"], "r") as h5:
        embeddings_hash = h5.attrs["content_hash"]
    out = tmp_path / "m.h5"
    for restamp in (False, True):
        with edited_copy(projection, forged, restamp=restamp) as h5:
            inputs = json.loads(h5.attrs["inputs"])
            inputs[0].update(path=str(mnist["emb"]), content_hash=embeddings_hash)
            h5.attrs["inputs"] = json.dumps(inputs)
        if not restamp:
            result = pillar("train-private", mnist["emb"], "-p", forged, "--k", "5", "-o", out, expect=None)
            assert_clean_failure(
                result,
                3,
                f"{forged} was modified after it was written: its provenance no longer "
                "matches its record hash",
                out,
            )
    with h5py.File(forged, "r") as h5:
        public_rows = h5["rows/public"][()]
    with h5py.File(mnist["emb"], "r") as h5:
        overlap = len(set(public_rows.tolist()) & set(h5["splits/private/index"][()].tolist()))
    assert overlap > 0
    result = pillar(
        "train-private", mnist["emb"], "-p", forged, "--k", "5", "--steps", "5", "-o", out, expect=None
    )
    assert_clean_failure(
        result,
        5,
        f"{forged} was fitted on {overlap} rows of {mnist['emb']}:private (same source): "
        "the public data must not hold private rows",
        out,
    )


# what a buggy writer could leave, re-hashed so that only the schema's value checks stand in the way
FORGERIES = {
    "NaN component": (
        "pca",
        lambda h5: h5["components"].__setitem__((0, 0), np.nan),
        "has NaN or Inf in '/components'",
    ),
    "zero scale": (
        "pca",
        lambda h5: h5["scale"].__setitem__(3, 0.0),
        "has a scale that is not a positive number in every dimension",
    ),
    "NaN weights": (
        "model",
        lambda h5: h5["runs/0/weights"].__setitem__((0, 0), np.nan),
        "has NaN or Inf in '/runs/0/weights'",
    ),
    "NaN epsilon": (
        "model",
        lambda h5: h5["runs/epsilon_spent"].__setitem__(0, np.nan),
        "has an epsilon_spent that is not a number ≥ 0",
    ),
    "no private rows": (
        "model",
        lambda h5: h5["rows"].__delitem__("private"),
        "records its source but not its rows ('/rows/private')",
    ),
    "no public rows": (
        "pca",
        lambda h5: h5["rows"].__delitem__("public"),
        "records its source but not its rows ('/rows/public')",
    ),
    "selection without run ids": (
        "model",
        lambda h5: h5.attrs.__setitem__(
            "selection",
            json.dumps(
                [
                    {key: value for key, value in cell.items() if key != "run_ids"}
                    for cell in json.loads(h5.attrs["selection"])
                ]
            ),
        ),  # once KeyError: 'run_ids' in evaluate
        "has a selection whose cells are not (method, k, epsilon, run ids of its runs, what chose them)",
    ),
    "count of an unknown kind": (
        "model",
        lambda h5: _edit_guarantee(h5, "count", {"kind": "estimated"}),  # once a
        # traceback in release and evaluate
        "has a guarantee that is not one pillar reads (a unit, relation, count or release)",
    ),
    "count of households": (
        "model",
        lambda h5: _edit_guarantee(h5, "count", {"of": "households"}),  # once read and
        # said as it was stored
        "has a guarantee that is not one pillar reads (a unit, relation, count or release)",
    ),
    "unit of an unknown kind": (
        "model",
        lambda h5: _edit_guarantee(h5, "unit", {"unit": "household"}),  # once read
        # as a row
        "has a guarantee that is not one pillar reads (a unit, relation, count or release)",
    ),
    "relation pillar does not account": (
        "model",
        lambda h5: h5.attrs.__setitem__(
            "guarantee", json.dumps(json.loads(h5.attrs["guarantee"]) | {"relation": "REPLACE_ONE"})
        ),
        "has a guarantee that is not one pillar reads (a unit, relation, count or release)",
    ),
    "risk target below chance": (
        "model",
        # once printed as the target its ε was calibrated to
        lambda h5: _add_json_attribute(h5, "risk_target", {"max_tpr": 0.01, "at_fpr": 0.05}),
        "has a risk target that is not a TPR above an FPR, both in (0, 1)",
    ),
}


def _edit_guarantee(h5, part: str, change: dict) -> None:
    """The model's guarantee with one part's record changed."""
    guarantee = json.loads(h5.attrs["guarantee"])
    h5.attrs["guarantee"] = json.dumps(guarantee | {part: guarantee[part] | change})


def _add_json_attribute(h5, key: str, value: dict) -> None:
    """An attribute the file did not hold, stored as the writer stores a dict (JSON, named in json_attrs)."""
    h5.attrs[key] = json.dumps(value)
    h5.attrs["json_attrs"] = json.dumps([*json.loads(h5.attrs["json_attrs"]), key])


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_values_no_stage_can_use_are_refused_on_read(pillar, mnist, tmp_path, forgery):
    """Once NaN results, tracebacks, or (without rows) an overlap check that passed by finding nothing."""
    kind, edit, problem = FORGERIES[forgery]
    source = mnist["pca"] if kind == "pca" else tmp_path / "m.h5"
    if kind == "model":
        pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--steps", "5", "-o", source)
    forged = tmp_path / "forged.h5"
    with edited_copy(source, forged) as h5:
        edit(h5)
    label = "projection" if kind == "pca" else "model"
    result = pillar("inspect", forged, expect=None)
    assert_clean_failure(result, 3, f"{forged}: {label} artifact {problem}")


@pytest.mark.parametrize("share", [0.001, 0.8, 0.997])
def test_an_epsilon_edited_down_is_refused_on_read(pillar, mnist, tmp_path, share):
    """A valid-looking ε below what the run's DP event spends (re-hashed): every read recomputes the event's ε
    with its own accountant (privacy/claims.py) and refuses a claim more than 0.2 % below it, in the model and
    in a release; a claim 0.1 % below passes (the documented tolerance)."""
    model, release = tmp_path / "m.h5", tmp_path / "c.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--steps",
        "50",
        "--eps",
        "0.5",
        "-o",
        model,
    )
    pillar("release", model, "-o", release)
    honest = artifacts.read(model, "model")
    claimed = float(honest.array("runs/epsilon_spent")[0])
    event = event_from_dict(json.loads(str(honest.array("runs/event")[0])))
    delta = honest.attrs["guarantee"]["delta"]
    spent = computed_epsilon("prv", event, delta)  # what the claim is checked against, computed afresh
    assert spent == pytest.approx(claimed, rel=1e-12)
    for source, kind, edit in (
        (model, "model", lambda h5, value: h5["runs/epsilon_spent"].__setitem__(0, value)),
        (
            release,
            "classifier",
            lambda h5, value: h5.attrs.__setitem__(
                "privacy", json.dumps({**json.loads(h5.attrs["privacy"]), "epsilon": value})
            ),
        ),
    ):
        forged = tmp_path / f"forged-{kind}.h5"
        with edited_copy(source, forged) as h5:
            edit(h5, share * claimed)
        assert_clean_failure(
            pillar("inspect", forged, expect=None),
            3,
            (
                f"{forged}: {kind} artifact claims ε = {share * claimed:.4g} for a DP event that spends "
                f"ε = {spent:.4g} (prv, δ = {delta:g}): its ε was changed after it was written"
            ),
        )
        if kind == "model":  # within the tolerance: read (a release's summary would have to be edited too)
            with edited_copy(source, forged) as h5:
                edit(h5, 0.999 * claimed)
            pillar("inspect", forged)


def test_an_empty_gsd_ranking_is_refused(pillar, tmp_path):
    path = tmp_path / "g.h5"
    artifacts.write(path, gsd_artifact([], [], [], {}, None))
    assert_clean_failure(
        pillar("inspect", path, expect=None),
        3,
        f"{path}: gsd artifact has an empty ranking or distances that do not match it",
    )


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("command", "[0]", "'command' is not a list of strings"),
        ("config", "[1]", "'config' is not a mapping"),
        ("inputs", '[{"path": 1}]', "'inputs' is not a list of input references"),
    ],
)
def test_a_malformed_provenance_is_refused_on_read(pillar, mnist, tmp_path, key, value, problem):
    """Re-hashed, as anyone can: found by `make fuzz` as a TypeError in `inspect`."""
    forged = tmp_path / "forged.h5"
    with edited_copy(mnist["pca"], forged) as h5:
        h5.attrs[key] = value
    out = tmp_path / "a.h5"
    for argv in (
        ["inspect", forged, "--verify"],
        ["check-assumptions", f"{mnist['emb']}:val", "-p", forged, "--k", "2", "-o", out],
    ):
        assert_clean_failure(
            pillar(*argv, expect=None), 3, f"{forged} has a malformed provenance: {problem}", out
        )
