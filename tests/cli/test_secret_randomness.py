"""The guarantee against anyone who holds a file train-private writes: attacks that use everything the file
holds.

A one-step full-batch DP-SGD head from zero is W = −(lr/ñ)·(G + σC·Z): G the clipped gradient sum of the
private rows (computed here from the private split, as an attacker who knows all rows but one would), ñ the
released row count the update is divided by (in the file), Z the noise. The noise must be neither regenerable
from any seed the file holds nor shared between the file's heads; the experiment-only `--noise-seed` makes it
regenerable, and the file, inspect and evaluate say so.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from pillar_cli import artifacts
from pillar_cli.linear.engine import RunConfig, clipped_gradient_sum
from pillar_cli.projection import PublicPCA, project
from pillar_cli.randomness import NoiseSource

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

K, LR = 40, 0.5  # 41 × 10 noise entries a head: the std checks below sit 4 standard errors from chance


@pytest.fixture(scope="module")
def gradient_sum(mnist) -> np.ndarray:
    """(k + 1, C): the clipped gradient sum at zero of every private row, weights then bias, as training
    computes it."""
    private = artifacts.read_split(f"{mnist['emb']}:private")
    pca = PublicPCA.from_artifact(artifacts.read(mnist["pca"], "projection"))
    z = torch.as_tensor(project(pca, private.features, K), dtype=torch.float32)
    classes = int(private.labels.max()) + 1
    weights, bias = clipped_gradient_sum(
        torch.zeros(K, classes), torch.zeros(classes), z, torch.as_tensor(private.labels), 1.0
    )
    return np.vstack([weights.double().numpy(), bias.double().numpy()[None]])


def _train(mnist, pillar, out, *extra: str):
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        str(K),
        "--eps",
        "1,4",
        "--lr",
        str(LR),
        "--steps",
        "1",
        "--batch-size",
        "all",
        "--seed",
        "0",
        *extra,
        "-o",
        out,
    )
    return artifacts.read(out, "model")


def _noise_in_units(model, i: int, gradient_sum: np.ndarray) -> np.ndarray:
    """σC·Z of head i, recovered exactly from its weights and the private rows: −W·ñ/lr − G, divided by σ (C =
    1)."""
    # a full batch's expected size: the released count, not n
    count = model.attrs["guarantee"]["count"]["value"]
    update = -np.vstack([model.array(f"runs/{i}/weights"), model.array(f"runs/{i}/bias")[None]]) * count / LR
    return (update - gradient_sum) / float(model.array("runs/noise_multiplier")[i])


def test_heads_of_one_file_draw_independent_noise_that_no_seed_it_holds_regenerates(
    mnist, pillar, tmp_path, gradient_sum
):
    model = _train(mnist, pillar, tmp_path / "m.h5")
    assert model.array("runs/sample_rate").tolist() == [1.0, 1.0]
    z1, z4 = (_noise_in_units(model, i, gradient_sum) for i in (0, 1))
    # Each head carries standard normal noise, as its ledger states ...
    assert np.std(z1) == pytest.approx(1, rel=0.2) and np.std(z4) == pytest.approx(1, rel=0.2)
    # ... and the two draws are independent: the cancellation W_1/σ_1 − W_4/σ_4 leaves √2 units of noise, not
    # 0.
    assert np.std(z1 - z4) == pytest.approx(np.sqrt(2), rel=0.2)
    assert abs(np.corrcoef(z1.ravel(), z4.ravel())[0, 1]) < 0.3
    # No seed in the file regenerates it: not the run seed, not a noise seed (the file records none).
    assert "noise_seed" not in model.attrs["noise"] and model.attrs["noise"]["reproducible"] is False
    for seed in {int(s) for s in model.array("runs/seed")}:
        assert np.std(z1 - _regenerated(model, seed, 0)) > 1.2
    assert "trials_drawn" not in json.dumps(model.attrs)


def test_the_same_command_twice_draws_different_noise(mnist, pillar, tmp_path):
    first, second = (_train(mnist, pillar, tmp_path / f"{name}.h5") for name in ("a", "b"))
    assert not np.allclose(first.array("runs/0/weights"), second.array("runs/0/weights"))


def test_a_noise_seed_makes_noise_reproducible_and_every_output_says_it_is_not_private(
    mnist, pillar, tmp_path, gradient_sum
):
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        str(K),
        "--eps",
        "1,4",
        "--lr",
        str(LR),
        "--steps",
        "1",
        "--batch-size",
        "all",
        "--seed",
        "0",
        "--noise-seed",
        "7",
        "-o",
        tmp_path / "a.h5",
    )
    assert "NOT differentially private" in result.stderr
    first, second = (
        _train(mnist, pillar, tmp_path / name, "--noise-seed", "7", "--force") for name in ("a.h5", "b.h5")
    )
    assert np.array_equal(first.array("runs/0/weights"), second.array("runs/0/weights"))
    assert first.attrs["noise"] == {
        "source": "seeded",
        "reproducible": True,
        "noise_seed": 7,
        "note": "noise reproducible from the recorded seed: NOT differentially private",
    }
    assert first.attrs["whole_file"]["epsilon"] == np.inf
    # The recorded seed removes the noise: what is left is the exact clipped gradient sum.
    z1 = _noise_in_units(first, 0, gradient_sum)
    assert np.abs(z1 - _regenerated(first, 7, 0)).max() < 1e-3
    shown = pillar("inspect", tmp_path / "a.h5").stdout
    assert "NOT differentially private" in shown
    report = json.loads(pillar("evaluate", tmp_path / "a.h5", "-e", f"{mnist['emb']}:test", "--json").stdout)
    assert "NOT differentially private" in " ".join(report["notes"])


def test_a_file_of_many_heads_states_the_guarantee_of_all_of_them_together(mnist, pillar, tmp_path):
    model = _train(mnist, pillar, tmp_path / "m.h5")
    whole = model.attrs["whole_file"]
    spent = model.array("runs/epsilon_spent")
    assert whole["heads"] == 2 and max(spent) < whole["epsilon"] <= sum(spent) + 1e-9
    assert "working file, not a release" in whole["kind"]
    assert "heads together" in pillar("inspect", tmp_path / "m.h5").stdout


def _regenerated(model, seed: int, i: int) -> np.ndarray:
    """The (k + 1, C) normals that a source seeded with `seed` draws for head i of this grid (the transpose of
    the engine's (C, k + 1) layout)."""
    config = RunConfig(LR, 1, int(model.array("runs/batch_size")[i]), int(model.array("runs/seed")[i]))
    source = (
        NoiseSource(seed).child(K, float(model.array("runs/epsilon_target")[i])).child(*config.noise_label)
    )
    return torch.randn(10, K + 1, generator=source.torch()).double().numpy().T
