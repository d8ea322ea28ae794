"""The one-run canary audit (pillar_cli/audit) on the demo's MNIST-5k splits: soundness over seeds on the real
engines, power against planted bugs, tightness, and cost next to one plain training run of the configuration.

Configurations: pillar (k = 10) and dpsgd (all 784 features), lr 0.5, 500 steps, batch 512, clip 1, δ = 1e-5,
PRV; dp-ls (k = 10). m = 1,000 canaries, 100 "in" and 100 "out" guesses, 95 % confidence. White-box
(--white-box): the file of pillar k = 10 heads at ε = 1 and 4, lr 0.5, one full-batch step, attacked with
every rule (m = 5,000 canaries, 1,000 guesses per side): soundness over seeds with secret noise, power against
a recorded noise seed and against noise shared between heads. Run: python benchmarks/bench_audit.py [--seeds
20] [--white-box]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pillar_cli import PublicPCA, read
from pillar_cli.audit.canaries import AuditSettings, run_audit
from pillar_cli.audit.white_box import SharedNoise, run_white_box_audit
from pillar_cli.linear.engine import RunConfig
from pillar_cli.methods.base import Cell
from pillar_cli.methods.catalog import get_method
from pillar_cli.methods.data import PrivacySettings, SweepData
from pillar_cli.randomness import NoiseSource

CONFIGS = {
    "pillar": (10, RunConfig(0.5, 500, 512, 0)),
    "dpsgd": (None, RunConfig(0.5, 500, 512, 0)),
    "dp-ls": (10, RunConfig(0.0, 1, 0, 0)),
}


def demo_data(directory: Path) -> SweepData:
    path = directory / "emb.h5"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pillar_cli",
            "embed",
            "--source",
            "mnist5k",
            "--backbone",
            "pixels",
            "--seed",
            "0",
            "-o",
            str(path),
        ],
        check=True,
        capture_output=True,
    )
    embeddings = read(path, "embeddings")
    public = embeddings.array("splits/public/features")
    return SweepData(
        PublicPCA(100).fit(public),
        embeddings.array("splits/private/features"),
        embeddings.array("splits/private/labels"),
        None,
        None,
        10,
        public,
    )


def audit(
    data: SweepData, method: str, epsilon: float, seed: int, noise_scale: float = 1.0, clip_scale: float = 1.0
):
    k, config = CONFIGS[method]
    return run_audit(
        get_method(method),
        data,
        k,
        epsilon,
        config,
        PrivacySettings(),
        AuditSettings(seed=seed, noise_scale=noise_scale, clip_scale=clip_scale),
    )


def white_box(data: SweepData, seeds: int) -> None:
    configs = [RunConfig(0.5, 1, len(data.private_x), 0)]

    def attack(seed: int, noise: NoiseSource | None = None):
        privacy = PrivacySettings() if noise is None else PrivacySettings(noise=noise)
        return run_white_box_audit(
            get_method("pillar"), data, 10, [1.0, 4.0], configs, privacy, AuditSettings(5000, 1000, seed=seed)
        )

    print(
        "White-box soundness: every rule's ε_lb ≤ its claim, over seeds (Bonferroni: all rules at 95 % at "
        "once)"
    )
    start = time.perf_counter()
    results = [attack(seed) for seed in range(seeds)]
    seconds = (time.perf_counter() - start) / seeds
    for index, name in enumerate(attack.name for attack in results[0].attacks):
        bounds = np.array([r.attacks[index].epsilon_lower_bound for r in results])
        claimed = results[0].attacks[index].epsilon_claimed
        print(
            f"  {name:48s} claimed {claimed:.4g}: {int((bounds <= claimed).sum())}/{seeds} sound; ε_lb "
            f"median {np.median(bounds):.3f}, max {bounds.max():.3f}"
        )
    print(f"  {seconds:.1f} s per audit")
    for label, noise in (("--noise-seed 7", NoiseSource(7)), ("planted shared noise", SharedNoise())):
        strongest = attack(0, noise).strongest
        print(
            f"Power, {label}: strongest rule {strongest.name}: {strongest.correct}/2000 right, ε_lb "
            f"{strongest.epsilon_lower_bound:.3f} against {strongest.epsilon_claimed:.4g}"
            f"{' (BROKEN)' if strongest.breaks else ''}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument(
        "--white-box", action="store_true", help="only the white-box audit of a file of heads"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data = demo_data(Path(scratch))
    if args.white_box:
        return white_box(data, args.seeds)
    print("Soundness: ε_lb ≤ claimed ε over seeds (95 % confidence: at least 19 of 20 expected)")
    for method in CONFIGS:
        for epsilon in (1.0, 4.0):
            results = [audit(data, method, epsilon, seed) for seed in range(args.seeds)]
            bounds = np.array([r.epsilon_lower_bound for r in results])
            claimed = results[0].epsilon_claimed
            print(
                f"  {method:6s} ε = {epsilon:g} (claimed {claimed:.4g}): "
                f"{int((bounds <= claimed).sum())}/{len(bounds)}"
                f" sound; ε_lb median {np.median(bounds):.3f}, max {bounds.max():.3f} "
                f"({bounds.max() / claimed:.2f} of ε)"
            )
    print("Power: planted bugs, seed 0 (claimed ε = 1)")
    for method in CONFIGS:
        for scale, clip, name in (
            (0.0, 1.0, "no noise"),
            (0.1, 1.0, "noise / 10"),
            (1.0, 1e6, "no clipping"),
        ):
            if clip != 1 and method == "dp-ls":
                continue  # unit-norm rows: nothing to clip
            result = audit(data, method, 1.0, 0, scale, clip)
            print(
                f"  {method:6s} {name:11s}: {result.correct}/{result.guesses} right, ε_lb = "
                f"{result.epsilon_lower_bound:.3f}"
            )
    print("Cost: one audit against one plain training run of the same configuration (best of 3)")
    for method in ("pillar", "dpsgd"):
        k, config = CONFIGS[method]
        pca = data.pca
        plain = Cell(data, pca, k, 1.0, [config], PrivacySettings(), "fast", "cpu")
        times = {"plain": [], "audit": []}
        for _ in range(3):
            start = time.perf_counter()
            get_method(method).train_cell(plain)
            times["plain"].append(time.perf_counter() - start)
            start = time.perf_counter()
            audit(data, method, 1.0, 0)
            times["audit"].append(time.perf_counter() - start)
        print(
            f"  {method}: plain {min(times['plain']):.2f} s, audit {min(times['audit']):.2f} s "
            f"({min(times['audit']) / min(times['plain']):.1f}x)"
        )


if __name__ == "__main__":
    main()
