"""Bad input: one line on stderr (plus an optional hint), a non-zero exit, no output file, nothing
overwritten."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy

from pillar_cli import artifacts
from pillar_cli.artifacts import core as artifact_core

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

BAD_INPUTS: list[str] = []


def bad_input(name: str):
    """Registers a test as one distinct bad input of the battery (counted below)."""

    def register(test):
        BAD_INPUTS.append(name)
        return test

    return register


@bad_input("missing file")
def test_missing_embeddings_file(pillar, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", tmp_path / "nope.h5", "-o", out, expect=None)
    assert_clean_failure(result, 3, f"artifact not found: {tmp_path / 'nope.h5'}", out)


@bad_input("wrong artifact kind")
def test_wrong_artifact_kind(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["emb"], "-o", out, expect=None)
    assert_clean_failure(result, 3, f"{mnist['emb']} is a embeddings artifact, expected projection", out)


@bad_input("corrupt HDF5")
def test_corrupt_artifact(pillar, tmp_path):
    (tmp_path / "bad.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    result = pillar("inspect", tmp_path / "bad.h5", expect=None)
    assert result.exit_code == 3 and result.stderr.startswith(
        f"error: {tmp_path / 'bad.h5'} is not a readable pillar"
    )


@bad_input("k > public rank")
def test_k_larger_than_the_public_rank(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "500", "-o", out, expect=None)
    public = mnist["rows"]["public"]
    assert_clean_failure(
        result,
        2,
        f"--k-max 500 exceeds the rank of the public features ({public - 1}: {public} rows, 784 dimensions)",
        out,
    )


@bad_input("k > stored components")
def test_k_larger_than_the_stored_components(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5,101", "-o", out, expect=None)
    assert_clean_failure(
        result,
        2,
        "k=101 is out of range: the projection holds 100 components (public rank "
        f"{mnist['rows']['public'] - 1})",
        out,
    )


@bad_input("epsilon <= 0")
@pytest.mark.parametrize("eps", ["0", "-1"])
def test_non_positive_epsilon(pillar, mnist, tmp_path, eps):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", eps, "-o", out, expect=None)
    assert_clean_failure(
        result, 2, f"--eps must be > 0 (got {float(eps)}); use 'inf' for non-private training", out
    )


@bad_input("delta >= 1/n")
def test_delta_not_below_one_over_n(pillar, mnist, tmp_path):
    """A δ checked against the count refuses in a line that shows no private value; the count it read is the
    ONE released for these rows (drawn once per dataset and noise scale, kept in the local cache), so
    repeating a refused run tells nothing new, and a later run on the same rows reads the same ñ."""
    out = tmp_path / "m.h5"
    refusals = [
        pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--delta", "0.001", "-o", out, expect=None)
        for _ in range(3)
    ]
    # the default path trains on the private and the val rows (about 3,600): their number is private, so δ <
    # 1/ñ reads the count released inside ε
    for result in refusals:
        assert_clean_failure(
            result,
            5,
            "--delta 0.001 is not below 1/ñ of the count of training rows released with "
            "noise: such a δ permits releasing individual records",
            out,
        )
    assert len({result.stderr for result in refusals}) == 1 and "3," not in refusals[0].stderr
    counts = []
    for name in ("a.h5", "b.h5"):
        pillar(
            "train-private",
            mnist["emb"],
            "-p",
            mnist["pca"],
            "--k",
            "5",
            "--steps",
            "10",
            "-o",
            tmp_path / name,
        )
        counts.append(artifacts.read(tmp_path / name, "model").attrs["guarantee"]["count"]["value"])
    assert (
        counts[0] == counts[1] != mnist["rows"]["private"] + mnist["rows"]["val"]
    )  # released once, read again
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--delta",
        "0.001",
        "--n-public",
        "-o",
        out,
        expect=None,
    )
    n = mnist["rows"]["private"] + mnist["rows"]["val"]
    assert_clean_failure(
        result,
        5,
        f"--delta 0.001 is not below 1/n = {1 / n:.3g} for the declared-public n = {n}: "
        "such a δ permits releasing individual records",
        out,
    )
    result = pillar(
        "gsd",
        "--private",
        mnist["emb"],
        "--public",
        f"{mnist['emb']}:test",
        "--dp-eps",
        "1",
        "--dp-delta",
        "0.001",
        "-o",
        out,
        expect=None,
    )  # gsd's own flags are named
    assert_clean_failure(
        result,
        5,
        "--dp-delta 0.001 is not below 1/n of the private rows read: such a δ permits "
        "releasing individual records",
        out,
    )


def test_a_batch_size_above_the_row_count_trains_on_every_row(pillar, mnist, tmp_path):
    """Not refused: refusing B > n would tell n. The sampling rate B/ñ is capped at 1 (a full batch)."""
    out = tmp_path / "m.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--batch-size",
        "5000",
        "--k",
        "5",
        "--eps",
        "1",
        "--steps",
        "20",
        "-o",
        out,
    )
    model = artifacts.read(out, "model")
    assert list(model.array("runs/sample_rate")) == [1.0] and model.array("runs/epsilon_spent")[0] <= 1.0


@bad_input("unknown accountant")
def test_unknown_accountant(pillar, mnist, tmp_path):
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--accountant",
        "moments",
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert_clean_failure(
        result, 2, "unknown accountant 'moments' (known: prv, rdp, pld, gdp)", tmp_path / "m.h5"
    )


@bad_input("NaN features")
def test_nan_features(pillar, mnist, tmp_path):
    poisoned = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], poisoned) as h5:
        features = h5["splits/public/features"]
        row = features[3]
        row[10] = np.nan
        features[3] = row
    result = pillar("fit-pca", f"{poisoned}:public", "-o", tmp_path / "pca.h5", expect=None)
    assert_clean_failure(
        result, 3, f"{poisoned}:public has 1 rows with NaN or Inf features", tmp_path / "pca.h5"
    )


@bad_input("projection fitted on other data")
def test_projection_fitted_on_other_embeddings(pillar, mnist, tmp_path):
    other = tmp_path / "other.h5"
    pillar("embed", "--source", "mnist5k", "--seed", "1", "-o", other)
    out = tmp_path / "m.h5"
    result = pillar("train-private", other, "-p", mnist["pca"], "-o", out, expect=None)
    assert_clean_failure(
        result, 3, f"{mnist['pca']} was fitted on other data ({mnist['emb']}:public) than {other}", out
    )


@bad_input("PCA on a labelled split")
def test_fit_pca_refuses_a_labelled_split(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", f"{mnist['emb']}:private", "-o", out, expect=None)
    assert_clean_failure(
        result,
        5,
        f"split 'private' of {mnist['emb']} is labelled; fit-pca fits on the unlabelled public split only",
        out,
    )


@bad_input("unknown split")
def test_unknown_split(pillar, mnist, tmp_path):
    result = pillar("fit-pca", f"{mnist['emb']}:holdout", "-o", tmp_path / "p.h5", expect=None)
    assert_clean_failure(
        result, 3, f"{mnist['emb']} has no split 'holdout' (available: private, public, test, val)"
    )


@bad_input("output overwrites input")
def test_output_overwriting_an_input_is_refused(pillar, mnist):
    before = mnist["pca"].read_bytes()
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", mnist["emb"], expect=None)
    assert_clean_failure(result, 2, f"output {mnist['emb']} would overwrite input {mnist['emb']}")
    assert mnist["pca"].read_bytes() == before


def test_failed_run_keeps_an_existing_output(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    out.write_bytes(b"previous result")
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "0", "-o", out, expect=2)
    assert out.read_bytes() == b"previous result"


@bad_input("missing output directory")
def test_missing_output_directory(pillar, mnist, tmp_path):
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "no" / "pca.h5", expect=None)
    assert_clean_failure(result, 2, f"output directory {tmp_path / 'no'} does not exist")


@bad_input("single-class split")
def test_single_class_private_split(pillar, tmp_path):
    x = np.random.default_rng(0).random((200, 4)).astype(np.float32)
    np.savez(tmp_path / "one.npz", x=x, y=np.zeros(200, dtype=np.int64))
    pillar(
        "embed",
        "--source",
        "npz",
        "--path",
        tmp_path / "one.npz",
        "--classes-from-labels",
        "-o",
        tmp_path / "e.h5",
    )
    pillar("fit-pca", f"{tmp_path / 'e.h5'}:public", "-o", tmp_path / "p.h5")
    result = pillar(
        "train-private",
        tmp_path / "e.h5",
        "-p",
        tmp_path / "p.h5",
        "--k",
        "2",
        "--delta",
        "1e-4",
        "--batch-size",
        "16",
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert_clean_failure(
        result,
        4,
        f"{tmp_path / 'e.h5'}:private holds one class; a classifier needs at least two",
        tmp_path / "m.h5",
    )


@bad_input("unknown backbone / offline weights")
def test_unknown_backbone_and_offline_weights(pillar, tmp_path):
    result = pillar("embed", "--backbone", "resnet9000", "-o", tmp_path / "e.h5", expect=None)
    assert result.exit_code == 2 and result.stderr.startswith("error: unknown backbone 'resnet9000'")
    result = pillar("embed", "--backbone", "byol", "-o", tmp_path / "e.h5", expect=None)
    assert_clean_failure(
        result,
        2,
        "backbone 'byol' has no hub weights here; pass --weights CHECKPOINT (or "
        "--no-pretrained for random weights)",
        tmp_path / "e.h5",
    )


@bad_input("an option that would be ignored")
def test_options_that_would_be_ignored_are_refused(pillar, mnist, tmp_path):
    """Each once went through with rc 0 and the option silently unused."""
    out = tmp_path / "out.h5"
    assert_clean_failure(
        pillar("embed", "--source", "digits", "--runtime", "bogus", "-o", out, expect=None),
        2,
        "--runtime must be one of auto, torch, onnxruntime; got 'bogus'",
        out,
    )
    assert_clean_failure(
        pillar("fit-pca", f"{mnist['emb']}:private", "--dp-eps", "1", "--components", "-o", out, expect=None),
        2,
        "--dp-eps fits a DP-PCA of the private rows; --components fits on public rows: pass one",
        out,
    )
    model, release = tmp_path / "m.h5", tmp_path / "rel.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--eps",
        "1",
        "--steps",
        "5",
        "-o",
        model,
    )
    pillar("release", model, "-o", release)
    pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "-o", tmp_path / "eval.h5")
    onnx = tmp_path / "c.onnx"
    assert_clean_failure(
        pillar(
            "export",
            release,
            "--format",
            "onnx",
            "--evaluation",
            tmp_path / "eval.h5",
            "-o",
            onnx,
            expect=None,
        ),
        2,
        "--evaluation states test metrics in a model card, which only --format hf writes (not onnx)",
        onnx,
    )


@bad_input("mismatched dimensions")
def test_evaluate_rejects_mismatched_dimensions(pillar, mnist, tmp_path):
    pillar("embed", "--source", "digits", "-o", tmp_path / "d.h5")
    model = mnist["root"] / "tiny-model.h5"
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
        "5",
        "-o",
        model,
    )
    result = pillar(
        "evaluate", model, "-e", f"{tmp_path / 'd.h5'}:test", "-o", tmp_path / "ev.h5", expect=None
    )
    assert_clean_failure(
        result, 4, "features have 64 dimensions; the model was trained on 784", tmp_path / "ev.h5"
    )


def test_every_command_documents_an_example(pillar):
    for command in (
        "embed",
        "fit-pca",
        "check-assumptions",
        "train-private",
        "gsd",
        "evaluate",
        "report",
        "inspect",
        "run",
    ):
        assert "Example: pillar " in pillar(command, "--help").stdout, command


@bad_input("image probe on vector features")
def test_image_probe_refuses_vector_features(pillar, tmp_path):
    pillar("embed", "--source", "synthetic-gmm", "--param", "n=400", "-o", tmp_path / "g.h5")
    out = tmp_path / "gsd.h5"
    result = pillar(
        "gsd",
        "--probe",
        "cnn",
        "--private",
        tmp_path / "g.h5",
        "--public",
        tmp_path / "g.h5:test",
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(
        result,
        4,
        "the private split holds no images: image probes need pixel embeddings of an image source",
        out,
    )


@bad_input("DP subspace mechanism beyond its size")
def test_bingham_refuses_large_gradient_dimension(pillar, mnist, tmp_path):
    out = tmp_path / "gsd.h5"
    result = pillar(
        "gsd",
        "--private",
        mnist["emb"],
        "--public",
        f"{mnist['emb']}:test",
        "--dp-eps",
        "1",
        "--dp-mechanism",
        "bingham",
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(
        result, 2, "DP-GSD with bingham forms a 7850×7850 matrix; at most 2000 is supported", out
    )


@bad_input("unknown schema version")
def test_unknown_schema_version(pillar, mnist, tmp_path):
    future = tmp_path / "future.h5"
    with edited_copy(mnist["pca"], future) as h5:
        h5.attrs["schema_version"] = 4
    result = pillar("inspect", future, expect=None)
    assert_clean_failure(result, 3, f"{future} has schema version 4; this pillar reads version 3")


@bad_input("Inf features")
def test_inf_features(pillar, mnist, tmp_path):
    poisoned = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], poisoned) as h5:
        h5["splits/private/features"][0, 0] = np.inf
    result = pillar("train-private", poisoned, "-p", mnist["pca"], "-o", tmp_path / "m.h5", expect=None)
    assert_clean_failure(
        result, 3, f"{poisoned}:private has 1 rows with NaN or Inf features", tmp_path / "m.h5"
    )


@bad_input("label/feature length mismatch")
def test_label_feature_length_mismatch(pillar, mnist, tmp_path):
    broken = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], broken) as h5:
        labels = h5["splits/val/labels"][()]
        del h5["splits/val/labels"]
        h5["splits/val/labels"] = labels[:-5]
    result = pillar(
        "check-assumptions", f"{broken}:val", "-p", mnist["pca"], "-o", tmp_path / "a.h5", expect=None
    )
    rows = mnist["rows"]["val"]
    assert_clean_failure(
        result, 3, f"{broken}:val has {rows - 5} labels for {rows} feature rows", tmp_path / "a.h5"
    )


@bad_input("empty split")
def test_empty_val_split(pillar, tmp_path):
    x = np.random.default_rng(0).random((300, 4)).astype(np.float32)
    np.savez(tmp_path / "d.npz", x=x, y=np.arange(300) % 2, class_names=np.array(["0", "1"]))
    pillar(
        "embed",
        "--source",
        "npz",
        "--path",
        tmp_path / "d.npz",
        "--val-fraction",
        "0",
        "-o",
        tmp_path / "e.h5",
    )
    pillar("fit-pca", f"{tmp_path / 'e.h5'}:public", "-o", tmp_path / "p.h5")
    result = pillar(
        "train-private",
        tmp_path / "e.h5",
        "-p",
        tmp_path / "p.h5",
        "--k",
        "2",
        "--delta",
        "1e-4",
        "--lr",
        "0.1,0.5",
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert_clean_failure(
        result,
        2,
        f"{tmp_path / 'e.h5'} has no val split, which selecting among 2 configurations "
        "per (method, k, ε) needs",
        tmp_path / "m.h5",
    )
    pillar(
        "train-private",
        tmp_path / "e.h5",
        "-p",
        tmp_path / "p.h5",
        "--k",
        "2",
        "--eps",
        "inf",
        "--batch-size",
        "64",
        "-o",
        tmp_path / "single.h5",
    )  # one configuration per cell: nothing to select, no val needed


@bad_input("delta out of (0, 1)")
@pytest.mark.parametrize("delta", ["0", "1"])
def test_delta_outside_the_unit_interval(pillar, mnist, tmp_path, delta):
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--delta",
        delta,
        "-o",
        tmp_path / "m.h5",
        expect=None,
    )
    assert_clean_failure(result, 2, f"--delta must be in (0, 1) (got {float(delta)})", tmp_path / "m.h5")


@bad_input("public rows leaked into the private split")
def test_public_rows_in_the_private_split(pillar, mnist, tmp_path):
    leaky = tmp_path / "emb.h5"
    with edited_copy(mnist["emb"], leaky) as h5:
        index = h5["splits/public/index"][()]
        index[:3] = h5["splits/private/index"][:3]
        h5["splits/public/index"][...] = index
    pillar("fit-pca", f"{leaky}:public", "--k-max", "20", "-o", tmp_path / "p.h5")
    result = pillar(
        "train-private", leaky, "-p", tmp_path / "p.h5", "--k", "5", "-o", tmp_path / "m.h5", expect=None
    )
    assert_clean_failure(
        result, 5, f"{leaky}: 3 rows of the public split also appear in the private split", tmp_path / "m.h5"
    )


@bad_input("unwritable output directory")
def test_unwritable_output_directory(pillar, mnist, tmp_path, monkeypatch):
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda path, mode: False if mode == os.W_OK else real_access(path, mode)
    )
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "p.h5", expect=None)
    assert_clean_failure(
        result,
        3,
        f"cannot write {tmp_path / 'p.h5'}: directory {tmp_path} is not writable",
        tmp_path / "p.h5",
    )


@bad_input("full disk")
def test_full_disk_leaves_no_partial_artifact(pillar, mnist, tmp_path, monkeypatch):
    def no_space(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(artifact_core, "write_array", no_space)
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "p.h5", expect=None)
    assert_clean_failure(
        result, 3, f"cannot write {tmp_path / 'p.h5'}: [Errno 28] No space left on device", tmp_path / "p.h5"
    )
    assert list(tmp_path.iterdir()) == []


@bad_input("a neighbours workdir holding its input")
def test_a_neighbours_workdir_holding_the_embeddings_is_refused_and_the_file_left_as_it_was(
    pillar, mnist, tmp_path
):
    (tmp_path / "without").mkdir()
    audited = tmp_path / "without" / "emb.h5"
    audited.write_bytes(mnist["emb"].read_bytes())
    before = audited.read_bytes()
    result = pillar(
        "audit", "neighbours", audited, "--train=--k 5 --eps 1 --steps 20", "--export", "",
        "--runs", "2", "--workdir", tmp_path, expect=None,
    )  # fmt: skip
    assert_clean_failure(
        result,
        2,
        f"--workdir {tmp_path} holds {audited}, an input of the check: its runs would write among the inputs",
    )
    assert audited.read_bytes() == before and sorted(tmp_path.rglob("*")) == [tmp_path / "without", audited]


def test_a_neighbours_workdir_keeps_every_file_of_the_user_and_its_runs_in_a_fresh_folder(
    pillar, mnist, tmp_path
):
    """The user's files under the names of the check's run folders (with/run0, .pillar-neighbours-run) are
    left alone: its runs go to a folder of its own, made fresh in the workdir."""
    work = tmp_path / "work"
    mine = [
        work / "with" / "run0" / "notes.txt",
        work / ".pillar-neighbours-run" / "x.txt",
        work / "without" / "emb.h5",
    ]
    for number, path in enumerate(mine):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"the user's file {number}")
    result = pillar(
        "audit", "neighbours", mnist["emb"], "--train=--k 5 --eps 1 --steps 20", "--export", "",
        "--runs", "2", "--workdir", work, "--json",
    )  # fmt: skip
    kept = Path(json.loads(result.stdout)["runs_kept_in"])
    assert [path.read_text() for path in mine] == [f"the user's file {n}" for n in range(3)]
    assert kept.parent == work and kept.name.startswith("neighbours-") and (kept / "with" / "run1").is_dir()


@bad_input("a class list that is not UTF-8")
def test_a_class_list_in_latin_1_or_binary_is_one_line(pillar, tmp_path):
    (tmp_path / "classes.txt").write_bytes("café\nthé\n".encode("latin-1"))
    result = pillar(
        "embed", "--source", "digits", "--classes", tmp_path / "classes.txt", "-o", tmp_path / "e.h5",
        expect=None,
    )  # fmt: skip
    assert_clean_failure(
        result,
        2,
        f"--classes {tmp_path / 'classes.txt'} is not UTF-8 text (byte 3 cannot be read): give a file of one "
        "class name a line",
        tmp_path / "e.h5",
    )


@bad_input("an audited configuration no run can train")
def test_an_audit_of_zero_steps_or_a_k_beyond_the_projection_is_one_line(pillar, mnist, tmp_path):
    """Once a ZeroDivisionError, and an attempt to allocate 37 GiB of canary rows."""
    for audit in ("canaries", "white-box"):
        steps = pillar("audit", audit, mnist["emb"], "-p", mnist["pca"], "--train=--steps 0", expect=None)
        assert_clean_failure(
            steps, 2, "--train: Invalid value for '--steps': Input should be greater than or equal to 1"
        )
        wide = pillar("audit", audit, mnist["emb"], "-p", mnist["pca"], "--train=--k 100000", expect=None)
        assert_clean_failure(
            wide, 2, "k=100000 is out of range: the projection holds 100 components (public rank 389)"
        )


@bad_input("a δ no dataset admits")
def test_a_delta_of_one_half_is_refused_before_the_count_even_beside_a_risk_target(pillar, mnist, tmp_path):
    """Once a math domain error: the risk target's calibration ran at δ = 0.5."""
    result = pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--max-tpr", "0.2", "--delta", "0.5",
        "-o", tmp_path / "m.h5", expect=None,
    )  # fmt: skip
    assert_clean_failure(
        result, 2, "--delta 0.5 is not below 1/n for any dataset of two rows or more", tmp_path / "m.h5"
    )


@bad_input("a Ray cluster that cannot be reached")
def test_a_ray_address_nothing_answers_at_is_one_line_within_seconds(pillar, tmp_path, monkeypatch):
    """An address nobody answers at ran past 240 s printing Ray's own log lines; a garbage address, ray://
    without Ray's client and a local start that fails were tracebacks."""
    import importlib.util
    import time

    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("a Ray instance of another test is running in this process")
    embed = ["embed", "--source", "digits", "--engine", "ray", "-o", tmp_path / "r.h5"]
    started = time.monotonic()
    refused = pillar(*embed, "--address", "127.0.0.1:1", expect=None)
    assert_clean_failure(
        refused,
        2,
        "no Ray cluster answers at 127.0.0.1:1 (Connection refused, within 5 s)",
        tmp_path / "r.h5",
    )
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    assert pillar(*embed, expect=2).stderr.splitlines()[0] == refused.stderr.splitlines()[0]
    assert time.monotonic() - started < 30
    monkeypatch.delenv("RAY_ADDRESS")
    assert_clean_failure(
        pillar(*embed, "--address", "not an address", expect=None),
        2,
        "'not an address' is not a Ray address: give HOST:PORT (a head node's GCS port, e.g. 10.0.0.5:6379), "
        "ray://HOST:PORT or auto",
    )
    if importlib.util.find_spec("grpc") is None:
        assert_clean_failure(
            pillar(*embed, "--address", "ray://127.0.0.1:10001", expect=None),
            2,
            "ray://127.0.0.1:10001 is a Ray client address, which needs Ray's client",
        )

    def failing_start(**kwargs):
        raise RuntimeError("Failed to start the GCS server.\nmore of Ray's words")

    monkeypatch.setattr(ray, "init", failing_start)
    assert_clean_failure(
        pillar(*embed, expect=None), 2, "Ray could not start on this machine: Failed to start the GCS server."
    )


@bad_input("an ε no accountant can compute")
def test_a_dp_pca_at_an_epsilon_beyond_floating_point_is_one_line(pillar, mnist, tmp_path):
    """--dp-eps 1e300 was accepted with numpy's overflow warnings (and a solver's NaN under --accountant
    gdp)."""
    for accountant in ("prv", "gdp"):
        result = pillar(
            "fit-pca", f"{mnist['emb']}:private", "--dp-eps", "1e300", "--accountant", accountant,
            "-o", tmp_path / "p.h5", expect=None,
        )  # fmt: skip
        assert_clean_failure(
            result,
            2,
            "--dp-eps 1e+300 is above 700, where e^ε overflows the accountants' floating point: no guarantee "
            "can be computed for it; use 'inf' for non-private training",
            tmp_path / "p.h5",
        )


def test_the_battery_covers_at_least_20_distinct_bad_inputs():
    assert len(set(BAD_INPUTS)) == len(BAD_INPUTS) >= 20
