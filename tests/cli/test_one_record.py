"""The guarantee is one record, from the plan to every file a user shares: each finding of the review that
asked for it, reproduced — a person-unit model over a per-row DP-GSD, a risk target over a DP-PCA, hashes of
private files in an evaluation, the run record, a refused run's count, the holder's own public records, a card
edited behind its hashes — and what the one record does instead."""

from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy
from dp_accounting import pld
from safetensors import safe_open
from safetensors.numpy import save_file
from sklearn.datasets import load_digits

from pillar_cli import artifacts
from pillar_cli.artifacts.sharing import WITHHELD
from pillar_cli.cli.freshness import WORKING_FILE
from pillar_cli.privacy.events import event_from_dict, to_dp_accounting
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.risk import risk_of
from pillar_cli.release.exported import CONTENTS_KEY, HASH_KEY, HF_WEIGHTS, metadata_hash

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def patients(pillar, tmp_path_factory) -> dict:
    """Digits as an npz of 4 images a patient, embedded with an explicit public fraction; a DP-GSD ranking of
    its own public split and another file's at ε = 1 (the tests fit on the first: the other's rows are this
    file's private rows under another split seed)."""
    root = tmp_path_factory.mktemp("patients")
    digits = load_digits()
    images = (digits.images * 255 / 16).astype(np.uint8)
    np.savez(
        root / "d.npz",
        x=images,
        y=digits.target,
        groups=np.arange(len(images)) // 4,
        class_names=np.array([str(c) for c in range(10)]),
    )
    for name, seed in (("emb", 0), ("other", 1)):
        pillar(
            "embed",
            "--source",
            "npz",
            "--path",
            root / "d.npz",
            "--public-fraction",
            "0.2",
            "--seed",
            str(seed),
            "-o",
            root / f"{name}.h5",
        )
    pillar(
        "gsd",
        "--private",
        root / "emb.h5",
        "--public",
        f"{root / 'emb.h5'}:public",
        "--public",
        f"{root / 'other.h5'}:public",
        "--dp-eps",
        "1",
        "--dp-delta",
        "1e-4",
        "-o",
        root / "gsd.h5",
    )
    return {"root": root, "emb": root / "emb.h5", "gsd": root / "gsd.h5"}


def _statement(pillar, path) -> dict:
    return json.loads(pillar("inspect", path, "--json").stdout)["attrs"]["privacy"]


def _pld_epsilon(tree, delta: float) -> float:
    accountant = pld.PLDAccountant(value_discretization_interval=1e-5)
    accountant.compose(to_dp_accounting(tree))
    return accountant.get_epsilon(delta)


def test_a_dp_gsd_bounds_a_person_and_a_per_row_one_cannot_carry_a_person_unit(pillar, patients, tmp_path):
    """Finding 1: the DP-GSD clipped rows and named no unit, so a per-person model rested on a per-row release
    and stated a per-person ε it did not have. It now weighs each patient's rows to one row's weight, names
    the person, and the statement's ε — covering the choice — is dp-accounting's for the whole tree; a release
    per row (an older file's, forged here) under heads that protect a person is refused in one line."""
    ledger = artifacts.read(patients["gsd"], "gsd").attrs["ledger"]
    assert (
        ledger["unit"]["unit"] == "person"
        and "per person: each row weighted by 1/(its person's rows)" in ledger["mechanism"]
    )
    pca, model, release = tmp_path / "pca.h5", tmp_path / "m.h5", tmp_path / "rel.h5"
    pillar(
        "fit-pca", f"{patients['emb']}:public", "--public-from", patients["gsd"], "--k-max", "20", "-o", pca
    )
    pillar(
        "train-private", patients["emb"], "-p", pca, "--eps", "2", "--delta", "1e-4", "--k", "10", "-o", model
    )
    pillar("release", model, "-o", release)
    statement = _statement(pillar, release)
    assert statement["unit"]["unit"] == "person" and statement["delta"] == pytest.approx(2e-4)
    assert (
        1.97 <= statement["epsilon"] <= 2.0
        and statement["guarantee"]["upstream"][0]["released"] == "public choice"
    )
    assert statement["epsilon"] == pytest.approx(
        _pld_epsilon(event_from_dict(statement["event"]), 2e-4), rel=5e-3
    )
    assert any(
        line.startswith("choosing the public data: a DP-GSD release (Analyze-Gauss") and "per person" in line
        for line in statement["covers"]
    )
    forged, carried = tmp_path / "row-gsd.h5", tmp_path / "row-pca.h5"
    with edited_copy(patients["gsd"], forged) as h5:
        h5.attrs["ledger"] = json.dumps(json.loads(h5.attrs["ledger"]) | {"unit": {"unit": "row"}})
    pillar("fit-pca", f"{patients['emb']}:public", "--public-from", forged, "--k-max", "20", "-o", carried)
    assert_clean_failure(
        pillar(
            "train-private",
            patients["emb"],
            "-p",
            carried,
            "--eps",
            "2",
            "--delta",
            "1e-4",
            "-o",
            tmp_path / "no.h5",
            expect=None,
        ),
        5,
        "the public choice's DP release protects one row, and these rows name their persons: heads "
        "protecting a person cannot rest on it",
        tmp_path / "no.h5",
    )


def test_a_target_below_what_the_upstream_releases_spend_is_refused_before_anything_is_drawn(
    pillar, patients, tmp_path
):
    pca = tmp_path / "pca.h5"
    pillar(
        "fit-pca", f"{patients['emb']}:public", "--public-from", patients["gsd"], "--k-max", "20", "-o", pca
    )
    result = pillar(
        "train-private",
        patients["emb"],
        "-p",
        pca,
        "--eps",
        "0.5",
        "--delta",
        "1e-4",
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert result.exit_code == 5 and not (tmp_path / "m.h5").exists()
    assert (
        result.stderr.startswith("error: the releases these heads rest on already spend ε = ")
        and "no head fits within ε = 0.5" in result.stderr
    )


@pytest.mark.parametrize("upstream", ["count", "dp-pca", "dp-gsd"])
def test_a_risk_target_is_met_by_the_whole_composed_tree(pillar, mnist, patients, tmp_path, upstream):
    """Finding 2: --max-tpr was calibrated without the upstream release the runs then composed in, and the
    release failed its own check. Per upstream kind (the count alone, a DP-PCA, a DP-GSD), the TPR at 1 % FPR
    and ε are recomputed from the stored tree, and verify passes."""
    if upstream == "dp-gsd":
        emb, pca = patients["emb"], tmp_path / "pca.h5"
        pillar(
            "fit-pca",
            f"{patients['emb']}:public",
            "--public-from",
            patients["gsd"],
            "--k-max",
            "20",
            "-o",
            pca,
        )
    elif upstream == "dp-pca":
        emb, pca = mnist["emb"], tmp_path / "pca.h5"
        pillar("fit-pca", f"{mnist['emb']}:private", "--dp-eps", "0.5", "--k-max", "20", "-o", pca)
    else:
        emb, pca = mnist["emb"], mnist["pca"]
    model, release = tmp_path / "m.h5", tmp_path / "rel.h5"
    pillar(
        "train-private",
        emb,
        "-p",
        pca,
        "--max-tpr",
        "0.05",
        "--at-fpr",
        "0.01",
        "--k",
        "10",
        "--delta",
        "1e-4",
        "-o",
        model,
    )
    pillar("release", model, "-o", release)
    statement = _statement(pillar, release)
    tree = event_from_dict(statement["event"])
    assert 0.95 * 0.05 <= risk_of(tree).tpr_at(0.01) <= 0.05
    assert len(statement["guarantee"]["upstream"]) == (0 if upstream == "count" else 1)
    assert statement["epsilon"] == pytest.approx(_pld_epsilon(tree, statement["delta"]), rel=5e-3)
    checked = json.loads(pillar("verify", release, "--json").stdout)["checks"]
    assert {check["name"]: check["status"] for check in checked} | {"signature": "ok"} == {
        "signature": "ok",
        "hashes and statement": "ok",
        "epsilon": "ok",
        "risk": "ok",
    }


def test_an_evaluation_names_no_hash_of_a_file_holding_private_rows_and_working_files_say_what_they_are(
    pillar, mnist, tmp_path
):
    """Finding 3: the evaluation — what gets published — carried the embeddings' content hash, the same in
    every run of a dataset and different without one record. A shareable file now names such inputs without
    their hashes; inspect says of every file whether it is shareable or a working file."""
    model, evaluation = tmp_path / "m.h5", tmp_path / "eval.h5"
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--steps", "20", "-o", model)
    pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "-o", evaluation)
    pillar("release", model, "-o", tmp_path / "rel.h5")
    for shared in (evaluation, tmp_path / "rel.h5"):
        document = json.loads(pillar("inspect", shared, "--json").stdout)
        assert {ref["kind"]: ref["content_hash"] for ref in document["inputs"]}.items() <= {
            "model": WITHHELD,
            "embeddings": WITHHELD,
        }.items()
        assert document["sharing"].startswith("shareable")
        raw = artifacts.read(shared, ("evaluation", "classifier"))
        assert artifacts.read(mnist["emb"], "embeddings").provenance.content_hash not in json.dumps(raw.attrs)
    for working, holds in (
        (mnist["pca"], "the content hash of the embeddings"),
        (model, "every head of the grid"),
        (mnist["emb"], "row ids"),
    ):
        document = json.loads(pillar("inspect", working, "--json").stdout)
        assert (
            document["sharing"].startswith("working file, not to be shared") and holds in document["sharing"]
        )


def test_the_run_record_says_in_the_file_that_it_is_a_working_file(pillar, tmp_path):
    """Finding 4: .pillar-run.json holds the sha256 and size of every source file, beside a pipelines file a
    user commits, and no document called it a working file."""
    pipelines = tmp_path / "p.yaml"
    pipelines.write_text(
        f"pipelines:\n  a:\n    vars: {{workdir: {tmp_path}}}\n    steps:\n"
        "      - embed --source digits --backbone pixels -o {workdir}/e.h5\n"
    )
    pillar("run", pipelines, "a")
    record = json.loads((tmp_path / ".pillar-run.json").read_text())
    assert record["about"] == WORKING_FILE and "do not share or commit it" in WORKING_FILE


def test_a_check_that_needs_no_private_value_refuses_before_the_count_is_drawn(
    pillar, mnist, tmp_path, monkeypatch
):
    """Finding 5, the first half: a refusal that reads no private value (k above the projection's, here)
    happens before any count is drawn: nothing is cached, nothing printed. (The δ check that needs the count
    reads the one count released for the rows and shows no ñ: tests/cli/test_bad_inputs.py.)"""
    monkeypatch.setenv("PILLAR_CACHE_DIR", str(tmp_path / "cache"))
    result = pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5000", "-o", tmp_path / "m.h5", expect=None
    )
    assert result.exit_code == 2 and result.stderr.startswith("error: k=5000 is out of range")
    assert not (tmp_path / "cache" / "counts.json").exists()


def test_the_holders_own_public_records_are_said_and_a_person_source_makes_them_only_when_asked(
    pillar, tmp_path
):
    """Finding 6: one record in ten of the holder's own source fitted the released scaler and components, and
    only `not_covered` said so. A source naming persons now makes a public split only when asked; embed says
    how many records it uses unprotected, and the statement, the page and the card say it in words."""
    digits = load_digits()
    np.savez(
        tmp_path / "d.npz",
        x=(digits.images * 255 / 16).astype(np.uint8),
        y=digits.target,
        groups=np.arange(len(digits.target)) // 3,
        class_names=np.array([str(c) for c in range(10)]),
    )
    emb = tmp_path / "emb.h5"
    source = ["embed", "--source", "npz", "--path", tmp_path / "d.npz", "-o", emb]
    assert_clean_failure(
        pillar(*source, expect=None),
        2,
        "source 'd' names each row's person (array groups): a public split drawn from it would use "
        "about one person in 10 of your own source without protection",
        emb,
    )
    made = pillar(*source, "--public-fraction", "0.1")
    public = len(artifacts.read_split(f"{emb}:public").index)
    assert (
        f"warning: {public:,} records of your own source make the public split: they are used without "
        "protection" in made.stderr
    )
    pillar("fit-pca", f"{emb}:public", "--k-max", "20", "-o", tmp_path / "pca.h5")
    pillar(
        "train-private",
        emb,
        "-p",
        tmp_path / "pca.h5",
        "--eps",
        "1",
        "--delta",
        "1e-4",
        "-o",
        tmp_path / "m.h5",
    )
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    said = (
        f"{public:,} records of your own source were used without protection as public data: the projection "
        "was fitted on them"
    )
    assert said in _statement(pillar, tmp_path / "rel.h5")["not_covered"]
    pillar("page", tmp_path / "rel.h5", "-o", tmp_path / "rel.html")
    pillar("export", tmp_path / "rel.h5", "--format", "hf", "-o", tmp_path / "hf")
    assert said in (tmp_path / "rel.html").read_text() and said in (tmp_path / "hf" / "README.md").read_text()


def test_a_card_edited_behind_recomputed_hashes_fails_verify_and_the_page_says_it_is_not_signed(
    pillar, mnist, tmp_path
):
    """Finding 7: an hf card's body changed ("at most 0.01 %") with its hashes recomputed by pillar's own
    functions passed verify; a page did not say it is itself unsigned."""
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--steps",
        "20",
        "-o",
        tmp_path / "m.h5",
    )
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    pillar("export", tmp_path / "rel.h5", "--format", "hf", "-o", tmp_path / "hf")
    card, weights = tmp_path / "hf" / "README.md", tmp_path / "hf" / HF_WEIGHTS
    text = card.read_text()
    sentence = next(line for line in text.splitlines() if "with probability at most" in line)
    card.write_text(
        text.replace(sentence, "An attacker tells whether a row was used with probability at most 0.01 %.")
    )
    with safe_open(
        str(weights), "np"
    ) as handle:  # every hash recomputed, as a forger with pillar's functions would
        metadata, tensors = handle.metadata(), {name: handle.get_tensor(name) for name in handle.keys()}
    contents = json.loads(metadata[f"pillar_{CONTENTS_KEY}"]) | {
        "README.md": hashlib.sha256(card.read_bytes()).hexdigest()
    }
    metadata[f"pillar_{CONTENTS_KEY}"] = json.dumps(contents)
    carried = {
        key.removeprefix("pillar_"): json.loads(value)
        for key, value in metadata.items()
        if key.startswith("pillar_") and key != HASH_KEY
    }
    save_file(tensors, str(weights), metadata=metadata | {HASH_KEY: metadata_hash(carried)})
    result = pillar("verify", tmp_path / "hf", expect=None)
    assert result.exit_code == 3
    assert "its model card's text says other than the statement in its weights' metadata" in result.stdout
    pillar("page", tmp_path / "rel.h5", "-o", tmp_path / "rel.html")
    assert "This page itself is not signed" in (tmp_path / "rel.html").read_text()


def test_the_model_stores_the_plans_guarantee_and_its_release_copies_it(pillar, mnist, tmp_path):
    """One record: the model file's one guarantee attribute reads as the plan's Guarantee, and the release's
    statement holds that very guarantee for its head (the conftest hook checks it for every release the suite
    writes)."""
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "1", "-o", tmp_path / "m.h5")
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    model = Guarantee.from_attrs(artifacts.read(tmp_path / "m.h5", "model").attrs["guarantee"])
    statement = _statement(pillar, tmp_path / "rel.h5")
    assert Guarantee.from_attrs(statement["guarantee"]) == model and model.count.noisy
    assert (statement["delta"], statement["accountant"]) == (model.delta_total, model.accountant)
    assert not any(
        key in artifacts.read(tmp_path / "m.h5", "model").attrs
        for key in ("privacy_unit", "count", "projection_release")
    )
    assert math.isfinite(statement["epsilon"]) and statement["epsilon"] <= 1.0
