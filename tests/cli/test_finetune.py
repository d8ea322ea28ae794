"""Whole networks through the stages: pre-training on a public labelled source (sklearn digits), embedding
with the pre-trained network, DP fine-tuning and training from scratch on MNIST-5k at the digits' 8 × 8,
evaluated and their ledgers recomputed; and the refusals."""

from __future__ import annotations

import json
import pickle

import h5py
import numpy as np
import pytest
import torch
from checks import (
    assert_clean_failure,
    exported_probabilities,
    kept_by_fraction,
    mnist_pixels,
    read_predictions,
)

from pillar_cli import artifacts
from pillar_cli.artifacts.network import stored_state
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.embedding.networks import NetworkSpec, build_network, feature_extractor, load_state
from pillar_cli.randomness import NOT_PRIVATE_NOTE

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def nets(tmp_path_factory, pillar):
    root = tmp_path_factory.mktemp("nets")
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "pixels",
        "--test-fraction",
        "1",
        "--no-public-split",
        "-o",
        root / "digits.h5",
    )
    pillar(
        "embed",
        "--source",
        "mnist5k",
        "--backbone",
        "pixels",
        "--resize",
        "8",
        "--seed",
        "0",
        "-o",
        root / "mnist8.h5",
    )
    pillar(
        "pretrain",
        f"{root / 'digits.h5'}:test",
        "--arch",
        "cnn:2",
        "--lr",
        "0.2",
        "--steps",
        "150",
        "-o",
        root / "pre.h5",
    )
    pillar(
        "finetune",
        root / "mnist8.h5",
        "--weights",
        root / "pre.h5",
        "--eps",
        "1,8",
        "--seed",
        "0,1",
        "--lr",
        "1",
        "--momentum",
        "0.9",
        "--steps",
        "30",
        "--private-fraction",
        "0.25",
        "-o",
        root / "ft.h5",
    )
    return root


def network_of(path, run: int = 0) -> tuple[torch.nn.Module, NetworkSpec]:
    model = artifacts.read(path, "model")
    spec = NetworkSpec.from_attrs(model.attrs["network"])
    return load_state(build_network(spec), stored_state(model, run), str(path)), spec


def test_fine_tuned_networks_are_models_that_evaluate_and_audit_read(nets, pillar):
    model = artifacts.read(nets / "ft.h5", "model")
    quarter = len(kept_by_fraction(artifacts.read_split(f"{nets / 'mnist8.h5'}:private").features, 0.25))
    assert model.array("runs/method").tolist() == ["finetune"] * 4 and model.attrs["n_private"] == quarter
    assert model.attrs["pretrained_from"]["source"] == "digits" and model.attrs["private_fraction"] == 0.25
    spent = model.array("runs/epsilon_spent")
    assert np.all(spent <= model.array("runs/epsilon_target")) and np.all(
        spent > 0.95 * model.array("runs/epsilon_target")
    )
    assert [check.problems for check in check_ledger(model)] == [[]] * 4
    assert model.array("runs/steps_run").tolist() == [30] * 4
    rows = json.loads(
        pillar("evaluate", nets / "ft.h5", "-e", f"{nets / 'mnist8.h5'}:test", "--json").stdout
    )["rows"]
    assert [(row["method"], row["epsilon"], row["seeds"]) for row in rows] == [
        ("finetune", 1.0, 2),
        ("finetune", 8.0, 2),
    ]
    test = artifacts.read_split(f"{nets / 'mnist8.h5'}:test")
    images = torch.tensor(test.features).reshape(-1, 8, 8, 1).permute(0, 3, 1, 2)
    direct = []
    for run in (2, 3):  # ε = 8, seeds 0 and 1: the same images through the stored networks, by hand
        network, _ = network_of(nets / "ft.h5", run)
        direct.append(float((network.eval()(images).argmax(1).numpy() == test.labels).mean()))
    assert rows[1]["accuracies"] == pytest.approx(direct, abs=1e-12)
    assert rows[1]["accuracy_mean"] > 0.3  # chance: 0.1


def test_embedding_with_the_pre_trained_network_gives_its_penultimate_features(nets, pillar):
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "network",
        "--weights",
        nets / "pre.h5",
        "--test-fraction",
        "1",
        "--no-public-split",
        "-o",
        nets / "features.h5",
    )
    split = artifacts.read_split(f"{nets / 'features.h5'}:test")
    pixels = artifacts.read_split(f"{nets / 'digits.h5'}:test")
    network, _spec = network_of(nets / "pre.h5")
    with torch.no_grad():
        direct = feature_extractor(network).eval()(
            torch.tensor(pixels.features).reshape(-1, 8, 8, 1).permute(0, 3, 1, 2)
        )
    assert split.features.shape == (1797, 32) and split.attrs["backbone"] == "network"
    np.testing.assert_allclose(split.features, direct.numpy(), atol=2e-5)


def test_scratch_is_the_same_training_from_a_seeded_random_network_only_with_a_noise_seed(nets, pillar):
    command = [
        "finetune",
        nets / "mnist8.h5",
        "--arch",
        "cnn:2",
        "--eps",
        "8",
        "--lr",
        "1",
        "--momentum",
        "0.9",
        "--steps",
        "30",
        "--private-fraction",
        "0.25",
    ]
    for name, extra in (
        ("scratch", ()),
        ("scratch2", ()),
        ("seeded", ("--noise-seed", "4")),
        ("seeded2", ("--noise-seed", "4")),
    ):
        assert pillar(*command, *extra, "-o", nets / f"{name}.h5").exit_code == 0
    model = artifacts.read(nets / "scratch.h5", "model")
    assert model.array("runs/method").tolist() == ["scratch"] and "pretrained_from" not in model.attrs
    assert model.attrs["noise"]["source"] == "os-entropy" and model.attrs["whole_file"]["epsilon"] <= 8
    states = {
        name: stored_state(artifacts.read(nets / f"{name}.h5", "model"), 0)
        for name in ("scratch", "scratch2", "seeded", "seeded2")
    }
    same = {
        pair: all(np.array_equal(states[pair[0]][w], states[pair[1]][w]) for w in states[pair[0]])
        for pair in (("scratch", "scratch2"), ("seeded", "seeded2"))
    }
    assert same == {
        ("scratch", "scratch2"): False,
        ("seeded", "seeded2"): True,
    }  # secret noise; the switch repeats
    assert artifacts.read(nets / "seeded.h5", "model").attrs["noise"]["note"] == NOT_PRIVATE_NOTE


def test_network_stages_refuse_bad_inputs(nets, pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    assert_clean_failure(
        pillar(
            "train-private",
            mnist["emb"],
            "-p",
            mnist["pca"],
            "--warm-start",
            nets / "ft.h5",
            "-o",
            out,
            expect=None,
        ),
        3,
        f"warm-start model {nets / 'ft.h5'} holds networks, not a linear head on features",
        out,
    )
    pillar("fit-pca", f"{nets / 'mnist8.h5'}:public", "-o", tmp_path / "pca8.h5")
    pillar(
        "train-private",
        nets / "mnist8.h5",
        "-p",
        tmp_path / "pca8.h5",
        "--k",
        "5",
        "--eps",
        "inf",
        "--steps",
        "5",
        "-o",
        tmp_path / "head8.h5",
    )
    assert_clean_failure(
        pillar(
            "train-private",
            mnist["emb"],
            "-p",
            mnist["pca"],
            "--warm-start",
            tmp_path / "head8.h5",
            "-o",
            out,
            expect=None,
        ),
        3,
        f"warm-start model {tmp_path / 'head8.h5'} uses another feature standardisation than the projection",
        out,
    )
    assert_clean_failure(
        pillar("pretrain", f"{mnist['emb']}:public", "-o", out, expect=None),
        4,
        f"{mnist['emb']}:public is unlabelled: pre-training reads the labels of a PUBLIC labelled "
        "split, without DP",
        out,
    )
    assert_clean_failure(
        pillar(
            "finetune", nets / "mnist8.h5", "--weights", nets / "ft.h5", "--eps", "1", "-o", out, expect=None
        ),
        4,
        f"{nets / 'ft.h5'} holds no network pre-trained on public data (methods: finetune); a network "
        "trained on private rows carries an ε that nothing built on it accounts",
        out,
    )
    assert_clean_failure(
        pillar("pretrain", f"{nets / 'mnist8.h5'}:private", "-o", out, expect=None),
        5,
        f"{nets / 'mnist8.h5'}:private is a protected split (pre-training reads its labels without "
        "DP): a starting point must come from public data, or the private rows it saw leak outside DP",
        out,
    )
    pillar(
        "embed",
        "--source",
        "mnist5k",
        "--backbone",
        "pixels",
        "--resize",
        "8",
        "--test-fraction",
        "1",
        "--no-public-split",
        "-o",
        tmp_path / "all.h5",
    )
    pillar("pretrain", f"{tmp_path / 'all.h5'}:test", "--steps", "2", "-o", tmp_path / "leaky.h5")
    private_rows = len(artifacts.read_split(f"{nets / 'mnist8.h5'}:private").index)
    assert_clean_failure(
        pillar(
            "finetune",
            nets / "mnist8.h5",
            "--weights",
            tmp_path / "leaky.h5",
            "--eps",
            "1",
            "-o",
            out,
            expect=None,
        ),
        5,
        f"the pre-trained network {tmp_path / 'leaky.h5'} was trained on {private_rows} rows of the private "
        "split: a starting point must come from public data, or the private rows it saw leak outside DP",
        out,
    )
    assert_clean_failure(
        pillar("finetune", nets / "mnist8.h5", "--eps", "0", "-o", out, expect=None),
        2,
        "--eps must be > 0 (got 0.0); use 'inf' for non-private training",
        out,
    )
    assert_clean_failure(
        pillar("finetune", nets / "mnist8.h5", "--arch", "resnet", "-o", out, expect=None),
        2,
        "unknown --arch 'resnet': cnn, cnn:WIDTH or a timm model name",
        out,
    )
    pillar(
        "embed",
        "--source",
        "mnist5k",
        "--backbone",
        "pixels",
        "--resize",
        "12",
        "-o",
        tmp_path / "mnist12.h5",
    )
    assert_clean_failure(
        pillar(
            "finetune",
            tmp_path / "mnist12.h5",
            "--weights",
            nets / "pre.h5",
            "--eps",
            "1",
            "-o",
            out,
            expect=None,
        ),
        4,
        "the pre-trained network reads (8, 8, 1) images into 10 classes (cnn:2); this split needs "
        "(12, 12, 1) into 10 (cnn:2)",
        out,
    )


def test_a_released_network_predicts_as_evaluate_scores_it_from_rows_images_and_exports(
    nets, pillar, tmp_path
):
    """One network of the model (ε = 8, seed 1): predictions on the test split agree with evaluate; raw MNIST
    images through the recorded pixel recipe give the same probabilities; ONNX and TorchScript modules from
    uint8 images agree with predict; the loaded estimator is predict's."""
    from sklearn.exceptions import NotFittedError

    from pillar_cli import NetworkClassifier, load

    released = tmp_path / "c.h5"
    pillar("release", nets / "ft.h5", "--cell", "eps=8", "--seed", "1", "-o", released)
    with h5py.File(released, "r") as h5:
        assert "weights" not in h5 and len(h5["network"]) > 0
    pillar("predict", released, f"{nets / 'mnist8.h5'}:test", "-o", tmp_path / "rows.csv")
    rows, names, probabilities = predictions(tmp_path / "rows.csv")
    test = artifacts.read_split(f"{nets / 'mnist8.h5'}:test")
    evaluated = json.loads(
        pillar("evaluate", nets / "ft.h5", "-e", f"{nets / 'mnist8.h5'}:test", "--json").stdout
    )
    accuracy = float(np.mean(np.asarray(names) == np.asarray(test.attrs["class_names"])[test.labels]))
    assert accuracy == evaluated["rows"][1]["accuracies"][1]
    estimator = pickle.loads(pickle.dumps(load(released)))
    np.testing.assert_allclose(estimator.predict_proba(test.features), probabilities, atol=1e-6)
    with pytest.raises(NotFittedError):
        NetworkClassifier().predict(test.features)

    pillar("predict", released, "--source", "mnist5k", "-o", tmp_path / "raw.csv")
    raw_rows, _, raw = predictions(tmp_path / "raw.csv")
    np.testing.assert_allclose(raw[np.searchsorted(raw_rows, rows)], probabilities, atol=1e-6)
    images = mnist_pixels()[0].reshape(-1, 28, 28, 1).astype(np.uint8)[rows]
    for fmt in ("onnx", "torchscript"):
        path = tmp_path / f"c.{fmt}"
        pillar("export", released, "--format", fmt, "-o", path)
        assert np.abs(exported_probabilities(path, images) - probabilities).max() <= 1e-5, fmt
    assert json.loads(pillar("inspect", tmp_path / "c.onnx", "--json").stdout)["privacy"][
        "epsilon"
    ] == pytest.approx(evaluated["rows"][1]["epsilon_spent"], rel=1e-6)


def test_a_network_release_refuses_what_it_cannot_be(nets, pillar, tmp_path):
    from pillar_cli import DPLinearClassifier

    released, out = tmp_path / "c.h5", tmp_path / "x.onnx"
    assert_clean_failure(
        pillar("release", nets / "ft.h5", "-o", released, expect=None),
        2,
        f"{nets / 'ft.h5'} holds 2 cells; name one with --cell: method=finetune,k=full,eps=1; "
        "method=finetune,k=full,eps=8",
        released,
    )
    pillar("release", nets / "ft.h5", "--cell", "eps=1", "-o", released)
    assert_clean_failure(
        pillar("export", released, "--format", "onnx", "--features-only", "-o", out, expect=None),
        2,
        "the release holds a fine-tuned network, which reads the images themselves: export it "
        "from images (drop --features-only)",
        out,
    )
    with pytest.raises(
        Exception,
        match=r"the release holds a fine-tuned network, not a linear head: load it with pillar_cli.load",
    ):
        DPLinearClassifier.from_release(released)
    assert_clean_failure(
        pillar("release", nets / "pre.h5", "-o", released, "--force", expect=None),
        5,
        f"cell method=pretrain,k=full,eps=inf of {nets / 'pre.h5'} is not private (ε = inf): a "
        "release holds a DP classifier",
        None,
    )


def predictions(path) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(row ids, predicted class names, probabilities) of a predictions CSV."""
    _, rows, names, probabilities = read_predictions(path)
    return np.array([int(r) for r in rows]), names, probabilities
