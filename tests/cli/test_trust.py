"""Silent wrong behaviour, refused: overwrites, modified inputs, contaminated test sets, private labels, bad
parameters. Each refusal is one line and a non-zero exit, and leaves every file as it was."""

from __future__ import annotations

import json
import os
import stat

import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy, snapshot

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_existing_outputs_are_replaced_only_with_force(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "20", "-o", out)
    before = snapshot(tmp_path)
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "30", "-o", out, expect=None)
    assert_clean_failure(result, 2, f"output {out} exists; pass --force to replace it")
    assert snapshot(tmp_path) == before
    plot = tmp_path / "acc.png"
    plot.write_bytes(b"an earlier figure")
    model = tmp_path / "m.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--eps",
        "inf",
        "--steps",
        "20",
        "-o",
        model,
    )
    before = snapshot(tmp_path)
    result = pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "--plot", plot, expect=None)
    assert_clean_failure(result, 2, f"output {plot} exists; pass --force to replace it")
    assert snapshot(tmp_path) == before
    pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "30", "-o", out, "--force")
    assert artifacts.read(out, "projection").attrs["k_max"] == 30


def test_outputs_are_readable_under_the_umask(pillar, mnist, tmp_path):
    previous = os.umask(0o022)
    try:
        pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "10", "-o", tmp_path / "pca.h5")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "pca.h5").stat().st_mode) == 0o644


def test_inputs_edited_after_they_were_written_are_refused(pillar, mnist, tmp_path):
    # each split read is rehashed: shifted private labels stop train-private, an edited public row fit-pca
    labels, public = tmp_path / "labels.h5", tmp_path / "public.h5"
    with edited_copy(mnist["emb"], labels, restamp=False) as h5:  # the stored hashes kept
        h5["splits/private/labels"][...] = (h5["splits/private/labels"][()] + 1) % 10
    with edited_copy(mnist["emb"], public, restamp=False) as h5:
        h5["splits/public/features"][0, 0] += 1.0
    before = snapshot(tmp_path)
    for edited, command in (
        (public, ["fit-pca", f"{public}:public", "-o", tmp_path / "p.h5"]),
        (labels, ["train-private", labels, "-p", mnist["pca"], "--eps", "inf", "-o", tmp_path / "m.h5"]),
    ):
        message = (
            f"{edited} was modified after it was written: its content no longer matches its content hash"
        )
        assert_clean_failure(pillar(*command, expect=None), 3, message)
    assert snapshot(tmp_path) == before
    projection = tmp_path / "pca.h5"
    with edited_copy(mnist["pca"], projection, restamp=False) as h5:
        del h5.attrs["k_max"]  # attributes are hashed too
    assert_clean_failure(
        pillar("inspect", projection, expect=None),
        3,
        f"{projection} was modified after it was written: its content no longer matches its content hash",
    )


def test_inspect_verify_rehashes_the_ancestors(pillar, mnist, tmp_path):
    embeddings, projection = tmp_path / "emb.h5", tmp_path / "pca.h5"
    embeddings.write_bytes(mnist["emb"].read_bytes())
    pillar("fit-pca", f"{embeddings}:public", "--k-max", "10", "-o", projection)
    chain = json.loads(pillar("inspect", projection, "--verify", "--json").stdout)["chain"]
    assert [link["status"] for link in chain] == ["ok"]
    with edited_copy(mnist["emb"], embeddings, restamp=False) as h5:
        h5["splits/public/features"][0, 0] += 1.0
    assert [
        link["status"] for link in json.loads(pillar("inspect", projection, "--json").stdout)["chain"]
    ] == ["ok"]
    chain = json.loads(pillar("inspect", projection, "--verify", "--json").stdout)["chain"]
    assert [link["status"] for link in chain] == ["modified"]


@pytest.mark.parametrize(
    "command, code, message",
    [
        (
            ["train-private", "{emb}", "-p", "{pca}", "--lr", "nan"],
            2,
            "--lr must be a positive number (got nan)",
        ),
        (
            ["train-private", "{emb}", "-p", "{pca}", "--clip", "0"],
            2,
            "--clip must be a positive number (got 0.0)",
        ),
        (
            ["train-private", "{emb}", "-p", "{pca}", "--clip", "-1"],
            2,
            "--clip must be a positive number (got -1.0)",
        ),
        (
            ["train-private", "{emb}", "-p", "{pca}", "--delta", "nan"],
            2,
            "--delta must be a finite number (got nan)",
        ),
        (
            ["train-private", "{emb}", "-p", "{pca}", "--weight-decay", "inf"],
            2,
            "--weight-decay must be a finite number (got inf)",
        ),
        (
            ["check-assumptions", "{emb}:val", "-p", "{pca}", "--eps", "-1"],
            2,
            "--eps must be a positive number (got -1.0)",
        ),
        (
            ["check-assumptions", "{emb}:val", "-p", "{pca}", "--eps", "1", "--alpha", "2"],
            2,
            "--alpha must be in (0, 1) (got 2.0)",
        ),
        (
            ["gsd", "--private", "{emb}", "--public", "{emb}:test", "--dp-eps", "1", "--clip", "0"],
            2,
            "--clip must be a positive number (got 0.0)",
        ),
    ],
)
def test_parameters_are_validated(pillar, mnist, tmp_path, command, code, message):
    argv = [part.format(emb=mnist["emb"], pca=mnist["pca"]) for part in command] + ["-o", tmp_path / "out.h5"]
    assert_clean_failure(pillar(*argv, expect=None), code, message, tmp_path / "out.h5")
    assert list(tmp_path.iterdir()) == []


def test_resize_applies_to_pixels_and_a_missing_public_split_is_asked_for(pillar, mnist, tmp_path):
    digits = tmp_path / "digits.h5"
    pillar("embed", "--source", "digits", "--backbone", "pixels", "--resize", "28", "-o", digits)
    stored = artifacts.read(digits, "embeddings")
    assert stored.attrs["input_shape"] == [28, 28, 1] and stored.array("splits/test/features").shape[1] == 784
    ranking = json.loads(
        pillar(
            "gsd",
            "--private",
            mnist["emb"],
            "--public",
            f"{digits}:public",
            "--public",
            f"{mnist['emb']}:test",
            "-o",
            tmp_path / "gsd.h5",
            "--json",
        ).stdout
    )["ranking"]
    assert [row["candidate"] for row in ranking] == [f"{mnist['emb']}:test", f"{digits}:public"]
    result = pillar(
        "embed",
        "--source",
        "synthetic-gmm",
        "--backbone",
        "pixels",
        "--resize",
        "28",
        "-o",
        tmp_path / "v.h5",
        expect=None,
    )
    assert_clean_failure(
        result, 2, "--resize and --crop apply to images; this source holds vectors", tmp_path / "v.h5"
    )
    for crop, whose in (("12", ""), (None, " (resnet18's input size)")):
        result = pillar(
            "embed",
            "--source",
            "digits",
            "--backbone",
            "resnet18",
            "--no-pretrained",
            "--resize",
            "10",
            *(["--crop", crop] if crop else []),
            "-o",
            tmp_path / "r.h5",
            expect=None,
        )
        size = crop or "224"
        assert (
            result.stderr
            == f"error: --resize 10 is below the centre crop {size}{whose}: the images would be "
            f"resized to {size} px, not 10\nhint: pass --crop 10 (or less) for 10 px inputs, or "
            f"--resize {size} or more\n"
        )
        assert result.exit_code == 2 and not (tmp_path / "r.h5").exists()
    result = pillar(
        "embed", "--source", "digits", "--public-fraction", "0", "-o", tmp_path / "e.h5", expect=None
    )
    assert_clean_failure(
        result,
        2,
        "these fractions leave no public split (--public-fraction 0.0, --test-fraction "
        "0.2): nothing could be fitted without private data",
        tmp_path / "e.h5",
    )
    pillar(
        "embed", "--source", "digits", "--public-fraction", "0", "--no-public-split", "-o", tmp_path / "e.h5"
    )
    assert "splits/public/features" not in artifacts.read(tmp_path / "e.h5", "embeddings").arrays


def test_a_test_set_sharing_rows_with_training_is_refused_unless_allowed(pillar, mnist, tmp_path):
    # the same source split with another seed: its test rows mix the model's rows
    other = tmp_path / "other.h5"
    pillar("embed", "--source", "mnist5k", "--seed", "1", "-o", other)
    model = tmp_path / "m.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--eps",
        "inf",
        "--steps",
        "20",
        "--lr",
        "0.1",
        "-o",
        model,
    )
    used = np.concatenate([artifacts.read_split(f"{mnist['emb']}:{s}").index for s in ("private", "val")])
    shared = int(np.isin(artifacts.read_split(f"{other}:test").index, used).sum())
    assert shared > 100
    before = snapshot(tmp_path)
    result = pillar("evaluate", model, "-e", f"{other}:test", "-o", tmp_path / "eval.h5", expect=None)
    assert_clean_failure(
        result,
        4,
        f"{other}:test shares {shared} rows with the rows {model} was trained or selected "
        "on, or read labels of (same source): that would not be a test accuracy",
        tmp_path / "eval.h5",
    )
    assert snapshot(tmp_path) == before
    result = pillar("evaluate", model, "-e", f"{other}:test", "-o", tmp_path / "eval.h5", "--allow-overlap")
    rows = len(artifacts.read_split(f"{other}:test").index)
    assert f"OVERLAP: {shared} of the {rows} rows were training or validation rows (allowed)" in result.stdout
    assert artifacts.read(tmp_path / "eval.h5", "evaluation").attrs["overlap_rows"] == shared
    pillar("evaluate", model, "-e", f"{mnist['emb']}:test")  # the model's own held-out rows


def test_private_labels_outside_dp_are_refused_unless_allowed(pillar, mnist, tmp_path):
    emb = mnist["emb"]
    result = pillar(
        "check-assumptions", f"{emb}:private", "-p", mnist["pca"], "-o", tmp_path / "a.h5", expect=None
    )
    assert_clean_failure(
        result,
        5,
        f"{emb}:private holds the private labels; the assumption checks would read them "
        "outside any DP release",
        tmp_path / "a.h5",
    )
    result = pillar(
        "gsd", "--private", emb, "--public", f"{emb}:private", "-o", tmp_path / "g.h5", expect=None
    )
    assert_clean_failure(
        result, 5, f"candidate {emb}:private is a private split, not public data", tmp_path / "g.h5"
    )
    other, projection = tmp_path / "other.h5", tmp_path / "pca.h5"
    pillar("embed", "--source", "mnist5k", "--seed", "2", "-o", other)
    pillar("fit-pca", f"{other}:public", "--k-max", "20", "-o", projection)
    result = pillar(
        "check-assumptions", f"{emb}:val", "-p", projection, "--k", "5", "-o", tmp_path / "a.h5", expect=None
    )
    assert_clean_failure(
        result, 3, f"{projection} was fitted on other data ({other}) than {emb}", tmp_path / "a.h5"
    )
    result = pillar(
        "check-assumptions",
        f"{emb}:private",
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--allow-private-labels",
        "-o",
        tmp_path / "a.h5",
    )
    assert "note: w* fitted on the PRIVATE labels (allowed explicitly" in result.stderr
    assert artifacts.read(tmp_path / "a.h5", "assumptions").attrs["summary"]["private_labels_used"] is True


def test_long_runs_report_progress_in_steps_off_a_terminal(pillar, mnist, tmp_path, monkeypatch):
    monkeypatch.setenv("PILLAR_PROGRESS_SECONDS", "0")  # a line at every update rather than every 10 s
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5,10",
        "--eps",
        "1",
        "--steps",
        "64",
        "--lr",
        "0.1,0.5",
        "--batch-size",
        "256",
        "-o",
        tmp_path / "m.h5",
    )
    lines = [line for line in result.stderr.splitlines() if line.startswith("DP-SGD: ")]
    assert lines[-1].startswith("DP-SGD: 256/256 steps (100 %), ") and lines[-1].endswith(" steps/s")
    assert len(lines) >= 4  # per chunk of 32 steps, not per run
    result = pillar("embed", "--source", "digits", "--batch-size", "200", "-o", tmp_path / "e.h5")
    assert [line for line in result.stderr.splitlines() if "images/s" in line][-1].startswith(
        "embedding with pixels: 1,797/1,797 images (100 %)"
    )
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "10", "-o", tmp_path / "p.h5")
    assert [line for line in result.stderr.splitlines() if "rows/s" in line][-1].startswith(
        f"fit-pca: {mnist['rows']['public']}/{mnist['rows']['public']} rows (100 %)"
    )
