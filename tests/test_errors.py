"""Bad input: one line on stderr (plus an optional hint), a non-zero exit, no output file, nothing overwritten."""

from __future__ import annotations

import h5py
import numpy as np
import pytest



def _assert_clean_failure(result, code: int, message: str, out=None):
    assert result.exit_code == code, result.stderr
    first, *rest = result.stderr.splitlines()
    assert first == f"error: {message}"
    assert all(line.startswith("hint: ") for line in rest) and len(rest) <= 1
    assert "Traceback" not in result.stderr and result.stdout == ""
    if out is not None:
        assert not out.exists()


def test_missing_embeddings_file(pillar, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", tmp_path / "nope.h5", "-o", out, expect=None)
    _assert_clean_failure(result, 3, f"artifact not found: {tmp_path / 'nope.h5'}", out)


def test_wrong_artifact_kind(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["emb"], "-o", out, expect=None)
    _assert_clean_failure(result, 3, f"{mnist['emb']} is a embeddings artifact, expected projection", out)


def test_corrupt_artifact(pillar, tmp_path):
    (tmp_path / "bad.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 64)
    result = pillar("inspect", tmp_path / "bad.h5", expect=None)
    assert result.exit_code == 3 and result.stderr.startswith(f"error: {tmp_path / 'bad.h5'} is not a readable pillar")


def test_k_larger_than_the_public_rank(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "500", "-o", out, expect=None)
    _assert_clean_failure(result, 2, "--k-max 500 exceeds the rank of the public features (399: 400 rows, 784 "
                          "dimensions)", out)


def test_k_larger_than_the_stored_components(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5,101", "-o", out, expect=None)
    _assert_clean_failure(result, 2, "k=101 is out of range: the projection holds 100 components (public rank 399)",
                          out)


@pytest.mark.parametrize("eps", ["0", "-1"])
def test_non_positive_epsilon(pillar, mnist, tmp_path, eps):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", eps, "-o", out, expect=None)
    _assert_clean_failure(result, 2, f"--eps must be > 0 (got {float(eps)}); use 'inf' for non-private training", out)


def test_delta_not_below_one_over_n(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--delta", "0.001", "-o", out, expect=None)
    _assert_clean_failure(result, 5, "--delta 0.001 is not below 1/n = 0.000313 for n = 3200 private rows: such a "
                          "δ permits releasing individual records", out)


def test_batch_size_larger_than_n(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--batch-size", "5000", "--k", "5",
                    "--eps", "inf", "-o", out, expect=None)
    _assert_clean_failure(result, 2, "--batch-size 5000 exceeds the 3200 private rows", out)


def test_unknown_accountant(pillar, mnist, tmp_path):
    result = pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--accountant", "moments", "-o",
                    tmp_path / "m.h5", expect=None)
    _assert_clean_failure(result, 2, "unknown accountant 'moments' (known: prv, rdp, pld, gdp)", tmp_path / "m.h5")


def test_nan_features(pillar, mnist, tmp_path):
    poisoned = tmp_path / "emb.h5"
    poisoned.write_bytes(mnist["emb"].read_bytes())
    with h5py.File(poisoned, "a") as h5:
        features = h5["splits/public/features"]
        row = features[3]
        row[10] = np.nan
        features[3] = row
    result = pillar("fit-pca", f"{poisoned}:public", "-o", tmp_path / "pca.h5", expect=None)
    _assert_clean_failure(result, 3, f"{poisoned}:public has 1 rows with NaN or Inf features", tmp_path / "pca.h5")


def test_projection_fitted_on_other_embeddings(pillar, mnist, tmp_path):
    other = tmp_path / "other.h5"
    pillar("embed", "--source", "mnist5k", "--seed", "1", "-o", other)
    out = tmp_path / "m.h5"
    result = pillar("train-private", other, "-p", mnist["pca"], "-o", out, expect=None)
    _assert_clean_failure(result, 3, f"{mnist['pca']} was fitted on other data ({mnist['emb']}) than {other}", out)


def test_fit_pca_refuses_a_labelled_split(pillar, mnist, tmp_path):
    out = tmp_path / "pca.h5"
    result = pillar("fit-pca", f"{mnist['emb']}:private", "-o", out, expect=None)
    _assert_clean_failure(result, 5, f"split 'private' of {mnist['emb']} is labelled; fit-pca fits on the "
                          "unlabelled public split only", out)


def test_unknown_split(pillar, mnist, tmp_path):
    result = pillar("fit-pca", f"{mnist['emb']}:holdout", "-o", tmp_path / "p.h5", expect=None)
    _assert_clean_failure(result, 3, f"{mnist['emb']} has no split 'holdout' (available: private, public, test, val)")


def test_output_overwriting_an_input_is_refused(pillar, mnist):
    before = mnist["pca"].read_bytes()
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", mnist["emb"], expect=None)
    _assert_clean_failure(result, 2, f"output {mnist['emb']} would overwrite input {mnist['emb']}")
    assert mnist["pca"].read_bytes() == before


def test_failed_run_keeps_an_existing_output(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    out.write_bytes(b"previous result")
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--eps", "0", "-o", out, expect=2)
    assert out.read_bytes() == b"previous result"


def test_missing_output_directory(pillar, mnist, tmp_path):
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "no" / "pca.h5", expect=None)
    _assert_clean_failure(result, 2, f"output directory {tmp_path / 'no'} does not exist")


def test_single_class_private_split(pillar, tmp_path):
    x = np.random.default_rng(0).random((200, 4)).astype(np.float32)
    np.savez(tmp_path / "one.npz", x=x, y=np.zeros(200, dtype=np.int64))
    pillar("embed", "--source", "npz", "--path", tmp_path / "one.npz", "-o", tmp_path / "e.h5")
    pillar("fit-pca", f"{tmp_path / 'e.h5'}:public", "-o", tmp_path / "p.h5")
    result = pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", "--k", "2", "--delta", "1e-4",
                    "--batch-size", "16", "-o", tmp_path / "m.h5", expect=None)
    _assert_clean_failure(result, 4, f"{tmp_path / 'e.h5'}:private holds a single class; a classifier needs at "
                          "least two", tmp_path / "m.h5")


def test_unknown_backbone_and_offline_weights(pillar, tmp_path):
    result = pillar("embed", "--backbone", "resnet9000", "-o", tmp_path / "e.h5", expect=None)
    assert result.exit_code == 2 and result.stderr.startswith("error: unknown backbone 'resnet9000'")
    result = pillar("embed", "--backbone", "byol", "-o", tmp_path / "e.h5", expect=None)
    _assert_clean_failure(result, 2, "backbone 'byol' has no hub weights here; pass --weights CHECKPOINT (or "
                          "--no-pretrained for random weights)", tmp_path / "e.h5")


def test_evaluate_rejects_mismatched_dimensions(pillar, mnist, tmp_path):
    pillar("embed", "--source", "digits", "-o", tmp_path / "d.h5")
    model = mnist["root"] / "tiny-model.h5"
    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--eps", "inf", "--steps", "5", "-o", model)
    result = pillar("evaluate", model, "-e", f"{tmp_path / 'd.h5'}:test", "-o", tmp_path / "ev.h5", expect=None)
    _assert_clean_failure(result, 4, "features have 64 dimensions; the model was trained on 784", tmp_path / "ev.h5")


def test_every_command_documents_an_example(pillar):
    for command in ("embed", "fit-pca", "check-assumptions", "train-private", "gsd", "evaluate", "inspect", "run"):
        assert "Example: pillar " in pillar(command, "--help").stdout, command
