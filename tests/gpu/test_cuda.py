"""The CUDA paths: engine, embedder and torchrun on a GPU agree with the CPU paths. Skipped without a GPU."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from pillar_cli import artifacts
from pillar_cli.data.dataset import Dataset
from pillar_cli.devices import resolve_device
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.extraction import FeatureStore, stream_split
from pillar_cli.errors import UsageError
from pillar_cli.linear.engine import RunConfig, clipped_gradient_sum, train_linear_heads
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import NoiseSource

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on machines without a GPU")
def test_asking_for_a_gpu_on_a_machine_without_one_is_a_clear_error(mnist, pillar, tmp_path):
    with pytest.raises(
        UsageError, match=r"device 'cuda' is not available: this machine has 0 CUDA device\(s\)"
    ):
        resolve_device("cuda")
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "inf",
        "--device",
        "cuda",
        "-o",
        tmp_path / "m.h5",
        expect=2,
    )
    assert result.stderr.splitlines() == [
        "error: device 'cuda' is not available: this machine has 0 CUDA device(s)",
        "hint: use --device cpu (or auto)",
    ]
    assert not (tmp_path / "m.h5").exists()
    assert resolve_device("auto") == torch.device("cpu")


def test_unknown_devices_are_refused():
    for name in ("gpu", "tpu:0"):
        with pytest.raises(UsageError, match="device"):
            resolve_device(name)


@cuda
def test_clipped_sum_on_cuda_equals_the_cpu():
    generator = torch.Generator().manual_seed(0)
    x, y = torch.randn(512, 300, generator=generator) * 2, torch.randint(0, 10, (512,), generator=generator)
    w, b = torch.randn(300, 10, generator=generator) * 0.1, torch.randn(10, generator=generator) * 0.1
    for clip in (0.1, 1.0, 100.0):
        on_cpu = clipped_gradient_sum(w, b, x, y, clip)
        on_gpu = clipped_gradient_sum(w.cuda(), b.cuda(), x.cuda(), y.cuda(), clip)
        for cpu_part, gpu_part in zip(on_cpu, on_gpu):
            torch.testing.assert_close(gpu_part.cpu(), cpu_part, rtol=1e-4, atol=1e-5)


@cuda
def test_noise_free_training_on_cuda_follows_the_cpu_batch_for_batch():
    """Batches come from the CPU sampler on every device, so without noise a sweep trains the same heads (the
    batches are secret: a seeded source, experiments only, makes both devices draw the same ones)."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2000, 64)).astype(np.float32), rng.integers(0, 10, 2000)
    configs = [
        RunConfig(lr, t, b, s, 0.5, 0.01)
        for lr, t, b, s in itertools.product((0.1, 0.5), (20, 45), (64, 256), (0, 1))
    ]
    for clip in (1.0, None):
        on_cpu = train_linear_heads(
            x, y, 10, configs, [0.0] * len(configs), clip, device="cpu", noise=NoiseSource(0)
        )
        on_gpu = train_linear_heads(
            x, y, 10, configs, [0.0] * len(configs), clip, device="cuda", noise=NoiseSource(0)
        )
        for a, b in zip(on_cpu, on_gpu):
            np.testing.assert_allclose(b.weights, a.weights, rtol=1e-3, atol=1e-5)
            np.testing.assert_allclose(b.bias, a.bias, rtol=1e-3, atol=1e-5)


@cuda
def test_person_level_training_on_cuda_follows_the_cpu():
    """Persons sampled on the CPU, their rows and pairs moved to the GPU (the eager path): without noise the
    heads the CPU trains."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((3000, 64)).astype(np.float32), rng.integers(0, 10, 3000)
    persons = rng.integers(0, 400, 3000)
    configs = [RunConfig(0.5, 30, 64, 0), RunConfig(0.1, 30, 64, 0), RunConfig(0.5, 20, 128, 1)]
    on_cpu, on_gpu = (
        train_linear_heads(
            x,
            y,
            10,
            configs,
            [0.0] * 3,
            0.5,
            device=device,
            noise=NoiseSource(4),
            units=Units.of(persons, len(persons), "the test's persons"),
        )
        for device in ("cpu", "cuda")
    )
    for a, b in zip(on_cpu, on_gpu):
        np.testing.assert_allclose(b.weights, a.weights, rtol=1e-3, atol=1e-5)
        assert a.steps_run == b.steps_run


@cuda
def test_cuda_noise_has_the_calibrated_scale_and_is_reproducible():
    """With all-zero features the weight gradient is zero, so one step leaves −lr/(q·n)·σ·C·N(0, 1) per
    weight; a seeded source (experiments only) repeats it, alone or inside a sweep, and a secret one never
    does."""
    n, dim, classes, batch, lr, sigma, clip = 4096, 2048, 10, 512, 0.1, 3.0, 0.5
    x, y = np.zeros((n, dim), np.float32), np.arange(n) % classes
    config = RunConfig(lr, 1, batch, 7)
    head = train_linear_heads(x, y, classes, [config], [sigma], clip, device="cuda", noise=NoiseSource(3))[0]
    draws = head.weights / (-lr / batch * sigma * clip)
    assert abs(draws.mean()) < 0.03 and abs(draws.std() - 1.0) < 0.02  # 20,480 standard normals
    again = train_linear_heads(x, y, classes, [config], [sigma], clip, device="cuda", noise=NoiseSource(3))[0]
    np.testing.assert_array_equal(again.weights, head.weights)
    in_a_sweep = train_linear_heads(
        x,
        y,
        classes,
        [RunConfig(0.3, 1, batch, 7), config, RunConfig(lr, 1, 64, 7)],
        [1.0, sigma, 2.0],
        clip,
        device="cuda",
        noise=NoiseSource(3),
    )[1]
    np.testing.assert_allclose(in_a_sweep.weights, head.weights, rtol=1e-5, atol=1e-7)
    secret = [train_linear_heads(x, y, classes, [config], [sigma], clip, device="cuda")[0] for _ in range(2)]
    assert not np.array_equal(secret[0].weights, secret[1].weights)
    assert (
        abs(np.corrcoef(secret[0].weights.ravel(), secret[1].weights.ravel())[0, 1]) < 0.05
    )  # independent draws


@cuda
def test_train_private_on_cuda_matches_the_cpu_without_noise_and_spends_the_same_epsilon(
    mnist, pillar, tmp_path
):
    """One noise seed for both devices (experiments only): the same released count, batches and ε; without
    noise the same head."""
    common = [
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "20",
        "--steps",
        "60",
        "--batch-size",
        "256",
        "--noise-seed",
        "5",
    ]
    for eps in ("inf", "1"):
        pillar(*common, "--eps", eps, "--device", "cpu", "-o", tmp_path / f"cpu-{eps}.h5")
        pillar(*common, "--eps", eps, "--device", "cuda", "-o", tmp_path / f"gpu-{eps}.h5")
        cpu = artifacts.read(tmp_path / f"cpu-{eps}.h5", "model")
        gpu = artifacts.read(tmp_path / f"gpu-{eps}.h5", "model")
        np.testing.assert_array_equal(gpu.array("runs/epsilon_spent"), cpu.array("runs/epsilon_spent"))
        if eps == "inf":
            np.testing.assert_allclose(
                gpu.array("runs/0/weights"), cpu.array("runs/0/weights"), rtol=1e-3, atol=1e-5
            )
        else:  # other noise draws, the same guarantee: both heads are useful
            for device in ("cpu", "gpu"):
                report = pillar(
                    "evaluate",
                    tmp_path / f"{device}-{eps}.h5",
                    "-e",
                    f"{mnist['emb']}:test",
                    "-o",
                    tmp_path / f"{device}-eval.h5",
                    "--json",
                )
                assert json.loads(report.stdout)["rows"][0]["accuracies"][0] > 0.6


def _features(embedder, images: np.ndarray, batch: int, tmp_path, name: str) -> np.ndarray:
    dataset = Dataset("t", images, np.zeros(len(images), dtype=np.int64), ["0"])
    store = FeatureStore(tmp_path / f"{name}.partial", {}, {"all": len(images)}, embedder.feature_dim, False)
    stream_split(embedder, dataset, np.arange(len(images)), batch, store, "all")
    features = np.array(store.features("all"))  # read before the store's file is removed
    store.finish()
    return features


@cuda
def test_gpu_embedder_agrees_with_the_cpu_and_bf16_with_fp32(tmp_path):
    images = np.random.default_rng(0).integers(0, 255, (200, 32, 32, 3), dtype=np.uint8)
    options = {"pretrained": False, "resize": 72, "crop": 64}
    cpu = build_embedder("resnet18", images.shape[1:], device="cpu", precision="fp32", **options)
    fp32 = build_embedder("resnet18", images.shape[1:], device="cuda", precision="fp32", **options)
    bf16 = build_embedder("resnet18", images.shape[1:], device="cuda", **options)
    assert bf16.bf16 and bf16.info()["precision"] == "bf16 autocast"  # auto on CUDA
    reference = _features(cpu, images, 64, tmp_path, "cpu")
    pipelined = _features(fp32, images, 64, tmp_path, "fp32")
    # fp32 is fp32 (no TF32) on the GPU
    np.testing.assert_allclose(pipelined, reference, rtol=1e-3, atol=1e-4)
    one_batch_at_a_time = np.concatenate([fp32(images[i : i + 64]) for i in range(0, 200, 64)])
    np.testing.assert_allclose(pipelined, one_batch_at_a_time, rtol=1e-6, atol=1e-6)
    half = _features(bf16, images, 64, tmp_path, "bf16")
    cosine = (half * pipelined).sum(1) / (np.linalg.norm(half, axis=1) * np.linalg.norm(pipelined, axis=1))
    assert cosine.min() > 0.999
    assert np.median(np.linalg.norm(half - pipelined, axis=1) / np.linalg.norm(pipelined, axis=1)) < 2e-2


@cuda
def test_torchrun_ranks_sharing_gpus_embed_and_merge(pillar, tmp_path):
    """Two ranks per GPU when there are fewer GPUs than ranks (LOCAL_RANK modulo the device count)."""
    args = [
        "embed",
        "--source",
        "digits",
        "--limit",
        "600",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "64",
        "--precision",
        "fp32",
    ]
    pillar(*args, "-o", tmp_path / "single.h5")
    ranks = 2 * torch.cuda.device_count()
    launched = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(ranks),
            "-m",
            "pillar_cli",
            *args,
            "-o",
            str(tmp_path / "ranks.h5"),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    assert launched.returncode == 0, launched.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranks.h5", "single.h5"]
    single = artifacts.read(tmp_path / "single.h5", "embeddings")
    merged = artifacts.read(tmp_path / "ranks.h5", "embeddings")
    assert single.attrs["precision"] == merged.attrs["precision"] == "fp32"
    for name, array in single.arrays.items():
        if name.endswith("/features"):  # other batch compositions may pick other convolution kernels
            np.testing.assert_allclose(merged.arrays[name], array, rtol=1e-3, atol=1e-4)
        else:
            np.testing.assert_array_equal(merged.arrays[name], array)
