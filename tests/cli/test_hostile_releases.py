"""Releases and exports edited by hand (and re-stamped, as a buggy writer would): every reader answers in one
line, leaves no partial output, and names what is wrong; an export cannot be written under another format's
name."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy, snapshot
from safetensors.numpy import save_file

from pillar_cli.artifacts.statement import statement_summary
from pillar_cli.release.exported import metadata_hash

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def release(mnist, pillar, tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile-release")
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "10",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "-o",
        root / "m.h5",
    )
    pillar("release", root / "m.h5", "-o", root / "rel.h5")
    return root / "rel.h5"


def _attrs_edit(key: str, change):
    def edit(h5):
        value = json.loads(h5.attrs[key])
        change(value)
        h5.attrs[key] = json.dumps(value)

    return edit


def _words_edit(change):
    """An edit of a statement's words with its summary made to match: only the record the words come from
    disagrees."""

    def edit_statement(statement):
        change(statement)
        statement["summary"] = statement_summary(statement)

    return _attrs_edit("privacy", edit_statement)


@pytest.mark.parametrize(
    "edit, problem",
    [
        (
            _attrs_edit("privacy", lambda p: p.update(epsilon="0.995")),
            "has a privacy statement whose epsilon is not of its type",
        ),
        (
            _attrs_edit("features", lambda f: f.pop("feature_dim")),
            "records a feature recipe whose feature_dim is not its scaler's 784",
        ),
        (
            _attrs_edit("privacy", lambda p: p.update(delta=0.5)),
            "has a privacy statement whose δ, accountant, unit or count is not what its guarantee says",
        ),
        (
            _attrs_edit(
                "privacy", lambda p: (p.update(delta=0.5), p["guarantee"].update(delta=0.5, delta_total=0.5))
            ),
            "states δ = 0.5, not below 1/ñ of the count of training rows it read",
        ),
        (
            lambda h5: h5.attrs.__setitem__("class_names", json.dumps(["0"] * 10)),
            "has class names that are not two or more distinct texts",
        ),
        (
            _attrs_edit(
                "privacy", lambda p: p.update(summary=re.sub(r"^\(ε = [\d.]+", "(ε = 0.01", p["summary"]))
            ),
            "has a privacy summary that does not say what its numbers and lists say",
        ),
        (
            _attrs_edit("privacy", lambda p: p.update(not_covered=[])),
            "has a privacy summary that does not say what its numbers and lists say",
        ),
        (
            _words_edit(lambda p: p.update(not_covered=[])),
            "has covers, not_covered and rests_on lists that its record of how the head was trained does not "
            "give",
        ),
        (
            _words_edit(
                lambda p: p["covers"].append("choosing its hyper-parameters: an accounted private selection")
            ),
            "has covers, not_covered and rests_on lists that its record of how the head was trained does not "
            "give",
        ),
        (
            _attrs_edit("privacy", lambda p: p.pop("basis")),
            "has a privacy statement without a readable record of how its head was trained (its basis)",
        ),
        (
            _attrs_edit("privacy", lambda p: p["unit"].update(unit="household")),
            "has a privacy statement whose δ, accountant, unit or count is not what its guarantee says",
        ),
        (
            _attrs_edit(
                "privacy",
                lambda p: (
                    p["unit"].update(unit="household"),
                    p["guarantee"]["unit"].update(unit="household"),
                ),
            ),
            "has a privacy statement whose guarantee is not one pillar reads (a unit, relation, count or "
            "release)",
        ),
        (
            _attrs_edit("privacy", lambda p: p.pop("guarantee")),  # a statement written by pillar 0.1
            "has a privacy statement written before a statement held its guarantee as one record",
        ),
        (
            # once read as stated
            _attrs_edit("privacy", lambda p: p.update(risk_target={"max_tpr": 0.01, "at_fpr": 0.05})),
            "has a privacy statement whose risk_target is not a TPR above an FPR, both in (0, 1)",
        ),
    ],
    ids=[
        "epsilon-a-string",
        "no-feature-dim",
        "delta-half",
        "delta-half-everywhere",
        "same-class-names",
        "summary-edited",
        "list-emptied",
        "words-and-summary-edited",
        "covers-added",
        "no-basis",
        "unit-unknown",
        "unit-unknown-everywhere",
        "no-guarantee",
        "risk-target-below-chance",
    ],
)
def test_an_edited_release_is_refused_in_one_line_by_predict(pillar, mnist, release, tmp_path, edit, problem):
    forged, out = tmp_path / "forged.h5", tmp_path / "p.csv"
    with edited_copy(release, forged) as h5:
        edit(h5)
    result = pillar("predict", forged, f"{mnist['emb']}:test", "-o", out, expect=None)
    assert result.exit_code == 3 and problem in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2 and not out.exists()


def test_an_export_carries_its_release_and_an_edit_of_its_metadata_is_refused(pillar, release, tmp_path):
    from safetensors import safe_open

    from pillar_cli import artifacts

    out = tmp_path / "c.safetensors"
    pillar("export", release, "--format", "safetensors", "-o", out)
    with safe_open(str(out), "np") as handle:
        metadata, tensors = handle.metadata(), {name: handle.get_tensor(name) for name in handle.keys()}
    assert json.loads(metadata["pillar_release"]) == {
        "content_hash": artifacts.read(release, "classifier").provenance.content_hash
    }
    privacy = json.loads(metadata["pillar_privacy"])
    privacy["not_covered"] = []  # the words edited, the summary made to match: only the hash still says so
    privacy["summary"] = statement_summary(privacy)
    save_file(
        tensors,
        str(tmp_path / "edited.safetensors"),
        metadata=metadata | {"pillar_privacy": json.dumps(privacy)},
    )
    result = pillar("inspect", tmp_path / "edited.safetensors", expect=None)
    assert result.exit_code == 3 and "its pillar metadata was changed after it was exported" in result.stderr


def test_exports_are_named_as_their_format_and_read_in_one_line(pillar, release, tmp_path):
    wrong = pillar("export", release, "--format", "onnx", "-o", tmp_path / "x.pt", expect=None)
    assert (
        wrong.exit_code == 2
        and wrong.stderr.splitlines()[0]
        == f"error: {tmp_path / 'x.pt'}: a onnx file is named .onnx, so that readers know its format"
    )
    assert not (tmp_path / "x.pt").exists()
    # once "named , so"
    folder = pillar("export", release, "--format", "hf", "-o", tmp_path / "x.onnx", expect=2)
    assert (
        folder.stderr.splitlines()[0]
        == f"error: {tmp_path / 'x.onnx'}: an hf export is a folder, named without a "
        "suffix"
    )
    keys = ("privacy", "class_names", "head", "features", "release", "contents")
    shape = {"privacy": [], "class_names": {}, "head": {}, "features": {}, "release": {}, "contents": {}}
    metadata = {f"pillar_{key}": json.dumps(value) for key, value in shape.items()}
    cases = {
        "none.safetensors": ({}, "carries no pillar privacy in its metadata"),
        "json.safetensors": ({f"pillar_{key}": "{" for key in keys}, "its pillar metadata is not JSON"),
        "hash.safetensors": (
            metadata | {"pillar_content_hash": "0" * 64},
            "its pillar metadata was changed after it was exported",
        ),
        "shape.safetensors": (
            metadata | {"pillar_content_hash": metadata_hash(shape)},
            "carries a class_names that is not a list",
        ),
    }
    for name, (metadata, problem) in cases.items():
        save_file({"bias": np.zeros(2, np.float32)}, str(tmp_path / name), metadata=metadata)
        result = pillar("inspect", tmp_path / name, expect=None)
        assert result.exit_code == 3 and problem in result.stderr and "Traceback" not in result.stderr, name
        assert "Error" not in result.stderr.split("\n")[0]  # no Python exception's name in the line
    (tmp_path / "cut.onnx").write_bytes(b"\x08\x07not onnx at all")
    cut = pillar("inspect", tmp_path / "cut.onnx", expect=None)
    assert cut.exit_code == 3 and f"{tmp_path / 'cut.onnx'} is not a readable onnx file" in cut.stderr


def test_a_seeded_model_edited_to_look_secret_is_not_released(mnist, pillar, tmp_path):
    """Only the `noise` attribute set back to OS entropy (and re-stamped): the command, the options and the
    whole-file statement still say the noise came from a seed."""
    seeded, forged = tmp_path / "seeded.h5", tmp_path / "forged.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "10",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "--noise-seed",
        "7",
        "-o",
        seeded,
    )
    with edited_copy(seeded, forged) as h5:
        h5.attrs["noise"] = json.dumps({"source": "os-entropy", "reproducible": False, "note": "edited"})
    result = pillar("release", forged, "-o", tmp_path / "rel.h5", expect=None)
    assert result.exit_code == 5 and result.stderr.splitlines()[0] == (
        f"error: {forged} was trained with experiment-only noise (--noise-seed): anyone holding the seed can "
        "remove it, so it has no guarantee to release"
    )
    assert not (tmp_path / "rel.h5").exists()


def test_an_epsilon_edited_down_by_one_percent_is_refused_by_every_reader(pillar, mnist, release, tmp_path):
    """0.99 of the true ε, with a consistent summary: every read recomputes the event tree's ε
    (privacy/claims.py, tolerance 0.2 %), so inspect, predict and export refuse the release, and release
    refuses the model."""
    forged = tmp_path / "forged.h5"

    def lower(statement):
        statement["epsilon"] *= 0.99
        statement["summary"] = statement_summary(statement)  # a consistent summary: only the number lies

    with edited_copy(release, forged) as h5:
        _attrs_edit("privacy", lower)(h5)
    for command, out in (
        (["inspect", forged], None),
        (["predict", forged, f"{mnist['emb']}:test", "-o", tmp_path / "p.csv"], tmp_path / "p.csv"),
        (
            ["export", forged, "--format", "safetensors", "-o", tmp_path / "x.safetensors"],
            tmp_path / "x.safetensors",
        ),
    ):
        result = pillar(*command, expect=None)
        assert result.exit_code == 3 and result.stderr.startswith(
            f"error: {forged}: classifier artifact claims ε = "
        )
        assert "its ε was changed after it was written" in result.stderr and (out is None or not out.exists())
    model, forged_model = release.parent / "m.h5", tmp_path / "m.h5"
    with edited_copy(model, forged_model) as h5:
        h5["runs/epsilon_spent"][0] = h5["runs/epsilon_spent"][0] * 0.99
    refused = pillar("release", forged_model, "-o", tmp_path / "rel.h5", expect=None)
    assert refused.exit_code == 3 and "its ε was changed after it was written" in refused.stderr
    assert not (tmp_path / "rel.h5").exists()


def test_an_hf_export_replaces_only_a_folder_an_hf_export_wrote(pillar, release, tmp_path, monkeypatch):
    """--force once deleted whatever folder -o named: the input release and a user's notes beside it, the
    working directory's parent; now each is refused in one line before any work, and nothing is touched."""
    sand, notes = tmp_path / "sand", tmp_path / "notes"
    sand.mkdir(), notes.mkdir()
    (sand / "rel.h5").write_bytes(release.read_bytes())
    (sand / "notes.txt").write_text("mine")
    (notes / "notes.txt").write_text("mine")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    before = snapshot(tmp_path)
    for source, target, message in (
        (
            sand / "rel.h5",
            sand,
            f"{sand} holds the input {sand / 'rel.h5'}: an hf export writes a folder of its own",
        ),
        (
            release,
            notes,
            f"{notes} holds notes.txt, which an hf export does not write: --force replaces only a "
            "folder an hf export wrote",
        ),
        (
            release,
            tmp_path / "work" / "..",
            f"{tmp_path / 'work' / '..'} is the working directory or a folder "
            "above it: an hf export writes a folder of its own",
        ),
        (
            release,
            tmp_path / "work" / ".",
            f"{tmp_path / 'work' / '.'} is the working directory or a folder above "
            "it: an hf export writes a folder of its own",
        ),
    ):
        result = pillar("export", source, "--format", "hf", "-o", target, "--force", expect=None)
        assert result.exit_code == 2 and result.stderr.splitlines()[0] == f"error: {message}", result.stderr
        assert snapshot(tmp_path) == before
    pillar("export", release, "--format", "hf", "-o", tmp_path / "hf")
    (tmp_path / "hf" / "README.md").write_text("an edited card")
    # an export's own folder: replaced
    pillar("export", release, "--format", "hf", "-o", tmp_path / "hf", "--force")
    assert sorted(p.name for p in (tmp_path / "hf").iterdir()) == [
        "README.md",
        "config.json",
        "model.safetensors",
    ]
    assert pillar("verify", tmp_path / "hf").exit_code == 0  # the card written again, its hash in the weights
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "hf",
        "notes",
        "sand",
        "work",
    ]  # no scratch left beside


def test_hf_force_spares_a_folder_of_only_a_readme_and_a_folder_named_like_its_scratch(
    pillar, release, tmp_path
):
    """A folder holding only the user's own README.md passed for an export's (README.md is one of its file
    names) and was replaced; a user's folder named `.OUT.partial` was removed as the export's scratch."""
    (tmp_path / "card").mkdir()
    (tmp_path / "card" / "README.md").write_text("my own notes")
    (tmp_path / ".hf.partial").mkdir()
    (tmp_path / ".hf.partial" / "keep.txt").write_text("mine")
    before = snapshot(tmp_path)
    result = pillar("export", release, "--format", "hf", "-o", tmp_path / "card", "--force", expect=None)
    assert_clean_failure(
        result,
        2,
        f"{tmp_path / 'card'} holds no model.safetensors: it is not a folder an hf export wrote, and --force "
        "replaces only such a folder",
    )
    pillar("export", release, "--format", "hf", "-o", tmp_path / "hf")
    assert {name: data for name, data in snapshot(tmp_path).items() if not name.startswith("hf/")} == before


def test_a_model_card_quotes_only_an_evaluation_of_the_released_head(pillar, mnist, release, tmp_path):
    """An evaluation of another model once put its accuracy into the card; now its heads' digests must hold
    the released head's."""
    other = tmp_path / "other.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "10",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "-o",
        other,
    )  # the same cell, trained again: other heads
    pillar("evaluate", other, "-e", f"{mnist['emb']}:test", "-o", tmp_path / "other-eval.h5")
    folder = tmp_path / "hf"
    result = pillar(
        "export",
        release,
        "--format",
        "hf",
        "--evaluation",
        tmp_path / "other-eval.h5",
        "-o",
        folder,
        expect=2,
    )
    assert result.stderr.splitlines() == [
        f"error: {tmp_path / 'other-eval.h5'} is no evaluation of the released head (method pillar, k 10, ε "
        "1): none of its heads is this one, so a card quoting it would describe another model",
        "hint: evaluate the model this classifier was released from (pillar evaluate MODEL -o eval.h5)",
    ]
    assert not folder.exists()
    pillar("evaluate", release.parent / "m.h5", "-e", f"{mnist['emb']}:test", "-o", tmp_path / "own-eval.h5")
    pillar("export", release, "--format", "hf", "--evaluation", tmp_path / "own-eval.h5", "-o", folder)
    assert (
        "model-index:" in (folder / "README.md").read_text()
    )  # the own evaluation's accuracy, as the Hub reads it


def test_class_names_holding_html_are_text_in_the_model_card_and_it_still_verifies(pillar, tmp_path):
    """The Hub renders a card's Markdown with its HTML: a class named `<script>…` was written into README.md
    as a tag (the page escaped it)."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    names = np.array(["<script>alert(1)</script>", *[f"digit {c}" for c in range(1, 10)]])
    np.savez(tmp_path / "d.npz", x=x.astype(np.float32), y=y, class_names=names)
    pillar("embed", "--source", "npz", "--path", tmp_path / "d.npz", "-o", tmp_path / "e.h5")
    pillar("fit-pca", f"{tmp_path / 'e.h5'}:public", "--k-max", "10", "-o", tmp_path / "p.h5")
    pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", "--k", "5", "--steps", "20",
           "-o", tmp_path / "m.h5")  # fmt: skip
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    pillar("export", tmp_path / "rel.h5", "--format", "hf", "-o", tmp_path / "hf")
    card = (tmp_path / "hf" / "README.md").read_text()
    body = card.split("\n---\n", 1)[1]
    assert "<script" not in body and "classes: &lt;script&gt;alert(1)&lt;/script&gt;, digit 1," in body
    assert pillar("verify", tmp_path / "hf").exit_code == 0
