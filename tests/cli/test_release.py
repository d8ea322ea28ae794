"""A release (one classifier and its privacy statement), predictions from it, and the Python estimator it
loads as, on MNIST-5k pixels."""

from __future__ import annotations

import csv
import json
import pickle

import h5py
import numpy as np
import pyarrow.parquet as pq
import pytest
from checks import assert_clean_failure, edited_copy, read_predictions
from sklearn.exceptions import NotFittedError

from pillar_cli import DPLinearClassifier, artifacts, load
from pillar_cli.artifacts.model import run_rows

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

CELLS = "; ".join(
    f"method={m},k={k},eps={e}" for m in ("pillar", "public-lda") for k in (10, 20) for e in (1, "inf")
)
SAFE_ATTRS = {"class_names", "head", "features", "privacy"}  # and the provenance every artifact has


@pytest.fixture(scope="module")
def model(mnist, pillar):
    path = mnist["root"] / "release-model.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--method",
        "pillar,public-lda",
        "--k",
        "10,20",
        "--eps",
        "1,inf",
        "--lr",
        "0.5,1",
        "--steps",
        "100",
        "--seed",
        "0,1",
        "-o",
        path,
    )
    return path


@pytest.fixture(scope="module")
def test_accuracies(mnist, pillar, model) -> dict[tuple, list[float]]:
    """evaluate's per-seed test accuracies, by (method, k, ε)."""
    rows = json.loads(pillar("evaluate", model, "-e", f"{mnist['emb']}:test", "--json").stdout)["rows"]
    return {(row["method"], str(row["k"]), row["epsilon"]): row["accuracies"] for row in rows}


def _predictions(path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(row ids, predicted class names, probabilities) of a predictions CSV."""
    header, rows, names, probabilities = read_predictions(path)
    assert header == ["row", "predicted", *(f"p_{c}" for c in range(10))]
    return np.array([int(r) for r in rows]), names, probabilities


def _all_keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for inner in value.values() for key in _all_keys(inner)}
    if isinstance(value, list):
        return {key for inner in value for key in _all_keys(inner)}
    return set()


def test_a_release_holds_one_head_and_its_statement_only(mnist, pillar, model, tmp_path):
    out = tmp_path / "classifier.h5"
    pillar("release", model, "--cell", "method=pillar,k=20,eps=1", "--seed", "1", "-o", out)
    with h5py.File(out, "r") as h5:
        datasets = []
        h5.visititems(lambda name, node: datasets.append(name) if isinstance(node, h5py.Dataset) else None)
        assert sorted(datasets) == [
            "bias",
            "mean",
            "scale",
            "weights",
        ]  # one head, on all 784 standardised features
        assert h5["weights"].shape == (784, 10)
        attrs = {
            key: json.loads(value) if key in json.loads(h5.attrs["json_attrs"]) else value
            for key, value in h5.attrs.items()
        }
    stored = artifacts.read(out, "classifier")
    assert set(stored.attrs) == SAFE_ATTRS
    keys = _all_keys({key: attrs[key] for key in SAFE_ATTRS})
    for secret in (
        "rows",
        "index",
        "n_private",
        "val_accuracy",
        "accuracy",
        "seed",
        "noise_seed",
        "run_ids",
        "selection",
        "whole_file",
    ):
        assert secret not in keys, secret
    statement = stored.attrs["privacy"]
    original = artifacts.read(model, "model")
    selected = next(
        c for c in original.attrs["selection"] if (c["method"], c["k"], c["epsilon"]) == ("pillar", 20, 1)
    )
    rows = run_rows(original)
    (run,) = [rows[i] for i in selected["run_ids"] if rows[i].key.seed == 1]
    assert statement["epsilon"] == run.epsilon_spent and statement["event"] == run.event
    assert any("val split's labels" in line for line in statement["not_covered"])
    assert any("among the model's 8 (method, k, ε) cells" in line for line in statement["not_covered"])

    check = json.loads(pillar("audit", "ledger", out, "--json").stdout)["runs"]
    assert len(check) == 1 and check[0]["status"] == "ok"
    assert check[0]["epsilon_recomputed"] == pytest.approx(statement["epsilon"], rel=0.01)


@pytest.mark.parametrize(
    ("cell", "seed"), [("method=pillar,k=20,eps=1", 1), ("method=public-lda,k=20,eps=1", 0)]
)
def test_predictions_agree_with_evaluate_and_with_the_loaded_estimator(
    mnist, pillar, model, test_accuracies, tmp_path, cell, seed
):
    classifier, predictions = tmp_path / "c.h5", tmp_path / "p.csv"
    pillar("release", model, "--cell", cell, "--seed", str(seed), "-o", classifier)
    summary = json.loads(
        pillar("predict", classifier, f"{mnist['emb']}:test", "-o", predictions, "--json").stdout
    )
    rows, predicted, probabilities = _predictions(predictions)
    test = artifacts.read_split(f"{mnist['emb']}:test")
    assert summary["rows"] == len(rows) == mnist["rows"]["test"] and np.array_equal(rows, test.index)
    accuracy = float(np.mean(np.array(predicted) == np.array([str(label) for label in test.labels])))
    method, k = cell.split(",")[0].removeprefix("method="), cell.split(",")[1].removeprefix("k=")
    assert accuracy == test_accuracies[(method, k, 1.0)][seed]  # exactly evaluate's, for this seed

    clf = load(classifier)
    assert np.array_equal(
        clf.predict_proba(test.features).astype(np.float32), probabilities.astype(np.float32)
    )
    # classes named 0..9 come back as the integers the labels are; the CSV names them
    assert clf.classes_.dtype.kind == "i" and np.array_equal(
        clf.predict(test.features).astype(str), predicted
    )
    assert clf.score(test.features, test.labels) == pytest.approx(accuracy)
    again = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(again.predict(test.features), clf.predict(test.features))
    statement = artifacts.read(classifier, "classifier").attrs["privacy"]
    assert clf.ledger_.epsilon_spent == statement["epsilon"]
    # pillar's lr was chosen on val among two; public-lda has one configuration, nothing was chosen
    assert ("val split's labels" in clf.ledger_.not_covered) == (method == "pillar")


def test_jsonl_and_parquet_predictions_and_an_unfitted_estimator(mnist, pillar, model, tmp_path):
    classifier, predictions = tmp_path / "c.h5", tmp_path / "p.jsonl"
    pillar("release", model, "--cell", "method=pillar,k=10,eps=1", "-o", classifier)
    pillar("predict", classifier, f"{mnist['emb']}:val", "-o", predictions)
    lines = [json.loads(line) for line in predictions.read_text().splitlines()]
    assert len(lines) == mnist["rows"]["val"] and set(lines[0]) == {"row", "predicted", "probabilities"}
    assert max(lines[0]["probabilities"], key=lines[0]["probabilities"].get) == lines[0]["predicted"]
    # CSV on stdout, the report on stderr
    piped = pillar("predict", classifier, f"{mnist['emb']}:val", "-o", "-")
    csv_file = tmp_path / "p.csv"
    pillar("predict", classifier, f"{mnist['emb']}:val", "-o", csv_file)
    assert piped.stdout.splitlines() == csv_file.read_text().splitlines()
    assert piped.stderr.startswith(
        f"{mnist['rows']['val']} rows of {mnist['emb']}:val classified (classifier ε = "
    )
    parquet = tmp_path / "p.parquet"
    pillar("predict", classifier, f"{mnist['emb']}:val", "-o", parquet)
    table = pq.read_table(parquet).to_pydict()
    assert table["row"] == [line["row"] for line in lines] and table["predicted"] == [
        x["predicted"] for x in lines
    ]
    with pytest.raises(NotFittedError):
        DPLinearClassifier().predict(np.zeros((1, 784)))


def test_refusals(mnist, pillar, model, tmp_path):
    out = tmp_path / "c.h5"
    assert_clean_failure(
        pillar("release", model, "-o", out, expect=None),
        2,
        f"{model} holds 8 cells; name one with --cell: {CELLS}",
        out,
    )
    assert_clean_failure(
        pillar("release", model, "--cell", "k=40", "-o", out, expect=None),
        2,
        f"{model}: no cell matches --cell k=40; cells: {CELLS}",
        out,
    )
    assert_clean_failure(
        pillar("release", model, "--cell", "method=pillar,k=20", "-o", out, expect=None),
        2,
        f"{model}: 2 cells match --cell method=pillar,k=20; cells: method=pillar,k=20,eps=1; "
        "method=pillar,k=20,eps=inf",
        out,
    )
    assert_clean_failure(
        pillar("release", model, "--cell", "method=pillar,k=20,eps=inf", "-o", out, expect=None),
        5,
        f"cell method=pillar,k=20,eps=inf of {model} is not private (ε = inf): a release holds a "
        "DP classifier",
        out,
    )
    assert_clean_failure(
        pillar("release", model, "--cell", "method=pillar,k=10,eps=1", "--seed", "7", "-o", out, expect=None),
        2,
        "cell method=pillar,k=10,eps=1 has repetitions (seeds) 0, 1; not 7",
        out,
    )

    seeded = tmp_path / "seeded.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "10",
        "--eps",
        "1",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "--noise-seed",
        "3",
        "-o",
        seeded,
    )
    assert_clean_failure(
        pillar("release", seeded, "-o", out, expect=None),
        5,
        f"{seeded} was trained with experiment-only noise (--noise-seed): anyone holding the seed "
        "can remove it, so it has no guarantee to release",
        out,
    )

    pillar("release", model, "--cell", "method=pillar,k=10,eps=1", "-o", out)
    smaller = tmp_path / "emb14.h5"
    pillar("embed", "--source", "mnist5k", "--backbone", "pixels", "--resize", "14", "-o", smaller)
    predictions = tmp_path / "p.csv"
    assert_clean_failure(
        pillar("predict", out, f"{smaller}:test", "-o", predictions, expect=None),
        4,
        f"{smaller}:test has 196 features; the classifier reads 784",
        predictions,
    )
    resized = tmp_path / "emb28.h5"  # the same 784 dimensions, made otherwise
    pillar("embed", "--source", "mnist5k", "--backbone", "pixels", "--resize", "28", "-o", resized)
    assert_clean_failure(
        pillar("predict", out, f"{resized}:test", "-o", predictions, expect=None),
        4,
        f"{resized}:test was embedded with preprocessing 'resize 28 (bilinear, antialiased), flatten "
        "(HWC order), /255'; the classifier's rows with 'flatten (HWC order), /255'",
        predictions,
    )
    assert_clean_failure(
        pillar("predict", out, f"{mnist['emb']}:test", "-o", tmp_path / "p.txt", expect=None),
        2,
        "cannot write predictions as '.txt': name the output *.csv, *.jsonl, *.parquet",
    )
    assert_clean_failure(
        pillar("predict", model, f"{mnist['emb']}:test", "-o", predictions, expect=None),
        3,
        f"{model} is a model artifact, expected classifier",
        predictions,
    )


# TorchScript, as asked for
@pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:FutureWarning")
@pytest.mark.parametrize("cell", ["method=pillar,k=20,eps=1", "method=public-lda,k=20,eps=1"])
def test_exports_agree_with_predict_and_carry_the_statement(mnist, pillar, model, tmp_path, cell):
    import onnxruntime
    import torch
    from safetensors import safe_open

    classifier = tmp_path / "c.h5"
    pillar("release", model, "--cell", cell, "-o", classifier)
    released = artifacts.read(classifier, "classifier")
    test = artifacts.read_split(f"{mnist['emb']}:test")
    expected = load(classifier).predict_proba(test.features)
    # pixels: features = images / 255
    images = np.rint(test.features.reshape(-1, 28, 28, 1) * 255).astype(np.uint8)
    assert np.array_equal(images.reshape(len(images), -1) / np.float32(255), test.features)

    for fmt, name, features_only in (
        ("onnx", "c.onnx", False),
        ("onnx", "f.onnx", True),
        ("torchscript", "c.pt", False),
        ("safetensors", "c.safetensors", False),
    ):
        path = tmp_path / name
        pillar(
            "export", classifier, "--format", fmt, "-o", path, *(["--features-only"] if features_only else [])
        )
        carried = json.loads(pillar("inspect", path, "--json").stdout)
        assert carried["format"] == fmt and carried["privacy"] == released.attrs["privacy"]
        assert carried["class_names"] == released.attrs["class_names"]
        inputs = test.features if features_only else images
        if fmt == "onnx":
            session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            (probabilities,) = session.run(None, {"input": inputs})
        elif fmt == "torchscript":
            probabilities = torch.jit.load(str(path))(torch.from_numpy(inputs)).numpy()
        else:
            with safe_open(str(path), "np") as handle:
                assert {key: handle.get_tensor(key).tolist() for key in handle.keys()} == {
                    key: released.array(key).tolist() for key in released.arrays
                }
            continue
        assert np.abs(probabilities - expected).max() <= 1e-5, (fmt, features_only)


def test_rows_of_a_csv_without_labels_are_classified_as_the_estimator_does(pillar, tmp_path):
    """csv --param label=none: features alone (a header allowed), the rows a user has to classify."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x, y = digits.data[:1200], digits.target[:1200]
    with open(tmp_path / "train.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([[*row, label] for row, label in zip(x.tolist(), y.tolist())])
    new = digits.data[1200:1250]
    with open(tmp_path / "new.csv", "w", newline="") as handle:
        csv.writer(handle).writerows([[f"pixel{i}" for i in range(64)], *new.tolist()])
    emb, pca, model, classifier = (tmp_path / name for name in ("emb.h5", "pca.h5", "m.h5", "c.h5"))
    pillar(
        "embed",
        "--source",
        "csv",
        "--path",
        tmp_path / "train.csv",
        "--classes",
        "0,1,2,3,4,5,6,7,8,9",
        "-o",
        emb,
    )
    pillar("fit-pca", f"{emb}:public", "--k-max", "20", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--k", "10", "--eps", "1", "-o", model)
    pillar("release", model, "-o", classifier)
    pillar(
        "predict",
        classifier,
        "--source",
        "csv",
        "--path",
        tmp_path / "new.csv",
        "--param",
        "label=none",
        "-o",
        tmp_path / "p.csv",
    )
    rows, names, probabilities = _predictions(tmp_path / "p.csv")
    estimator = load(classifier)
    assert rows.tolist() == list(range(50))
    np.testing.assert_allclose(probabilities, estimator.predict_proba(new.astype(np.float32)), atol=1e-6)
    assert names == [str(c) for c in estimator.predict(new.astype(np.float32))]
    result = pillar(
        "embed",
        "--source",
        "csv",
        "--path",
        tmp_path / "new.csv",
        "--param",
        "label=none",
        "-o",
        tmp_path / "e.h5",
        expect=None,
    )
    assert_clean_failure(
        result,
        4,
        "source 'csv' read 50 rows without labels: embed needs labelled rows for the "
        "private, val and test splits",
        tmp_path / "e.h5",
    )


def test_a_release_states_the_attribute_risk_at_a_given_prevalence(mnist, pillar, model, tmp_path):
    from pillar_cli.privacy import event_from_dict
    from pillar_cli.privacy.risk import attribute_accuracy

    out = tmp_path / "c.h5"
    said = pillar("release", model, "--cell", "method=pillar,k=20,eps=1", "--prior", "0.05", "-o", out).stdout
    statement = artifacts.read(out, "classifier").attrs["privacy"]
    attribute = statement["risk"]["attribute"]
    # recomputed from the event tree the release stores
    assert attribute == {
        "prior": 0.05,
        "accuracy": attribute_accuracy(event_from_dict(statement["event"]), 0.05),
    }
    assert 0.95 <= attribute["accuracy"] < 1
    assert "guessing a yes/no attribute that 5 % of them hold" in " ".join(said.split())
    checks = {c["name"]: c["status"] for c in json.loads(pillar("verify", out, "--json").stdout)["checks"]}
    assert checks["risk"] == "ok"
    understated = tmp_path / "understated.h5"
    with edited_copy(out, understated) as h5:  # an attribute risk claimed below guessing the majority
        privacy = json.loads(h5.attrs["privacy"])
        privacy["risk"]["attribute"]["accuracy"] = 0.9
        h5.attrs["privacy"] = json.dumps(privacy)
    checked = json.loads(pillar("verify", understated, "--json", expect=None).stdout)["checks"]
    risk = next(c for c in checked if c["name"] == "risk")
    assert risk["status"] == "FAIL" and "claims less risk than its event tree allows" in risk["detail"]
    for bad in ("0", "1", "1.5", "-0.2"):
        assert_clean_failure(
            pillar("release", model, "--prior", bad, "-o", tmp_path / "refused.h5", expect=None),
            2,
            f"--prior is a prevalence strictly between 0 and 1, not {float(bad):g}",
            tmp_path / "refused.h5",
        )
