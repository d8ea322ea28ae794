"""End-to-end time of the PILLAR paper's whole Figure 4 grid on CIFAR-sized synthetic features.

The grid is examples.yaml's `cifar10-sl-figure4` pipeline exactly as shipped (36 train-private runs, every (k,
ε) cell with its official lr, steps, batch size and seed, then fit-pca before and evaluate after), run in one
process like `pillar run`. Only its first step (embedding CIFAR-10 with a ResNet-50) is replaced: the features
are synthetic, 50,000 train rows (10 % public, 45,000 private) and 10,000 test rows of dimension 2,048 in 10
classes whose means and spiked covariance live in a low-dimensional subspace, written by `pillar embed
--source npz`. Calibration runs against an empty cache, so the time includes every accountant evaluation a
first run pays. Run: python benchmarks/bench_figure4.py [--device auto|cpu|cuda] [--workdir DIR] [--pipeline
cifar10-sl-figure4] [--max-steps N: cap every run's steps, a smoke run that is not the paper's grid]
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from pillar_cli.cli.pipeline import load_pipeline


def synthetic_features(path: Path, classes: int, seed: int = 0) -> None:
    """CIFAR-sized features with PILLAR's structure: class means and most variance in a 64-dimensional
    subspace."""
    rng = np.random.default_rng(seed)
    dim, rank, n_train, n_test = 2048, 64, 50_000, 10_000
    basis, _ = np.linalg.qr(rng.standard_normal((dim, rank)))
    means = rng.standard_normal((classes, rank)) * 0.3  # logistic regression on all rows: ~85 % test accuracy
    spread = np.geomspace(3.0, 0.3, rank)

    def part(n: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, classes, n)
        latent = means[labels] + rng.standard_normal((n, rank)) * spread
        features = latent @ basis.T + 0.3 * rng.standard_normal((n, dim))
        return features.astype(np.float32), labels

    x, y = part(n_train)
    x_test, y_test = part(n_test)
    np.savez(
        path, x=x, y=y, x_test=x_test, y_test=y_test, class_names=np.array([str(c) for c in range(classes)])
    )


class StageClock:
    """Seconds per pipeline command, and the seconds spent calibrating noise and recomputing ε inside them."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)

    def wrap(self, module, name: str, label: str) -> None:
        original = getattr(module, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(label, time.perf_counter() - start)

        setattr(module, name, timed)

    def add(self, label: str, seconds: float) -> None:
        self.seconds[label] += seconds
        self.count[label] += 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", default="auto", help="train-private --device for every run")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="where the artifacts go (default: a temp dir)"
    )
    parser.add_argument("--pipeline", default="cifar10-sl-figure4")
    parser.add_argument("--max-steps", type=int, default=None, help="cap each run's steps (smoke run)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.workdir or Path(scratch) / "work"
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["PILLAR_CACHE_DIR"] = str(Path(scratch) / "cache")  # cold calibration cache
        run(workdir, Path(scratch), args.pipeline, args.device, args.max_steps)


def capped(argv: list[str], max_steps: int | None) -> list[str]:
    """argv with its --steps value capped at max_steps (None: unchanged)."""
    if max_steps is None or "--steps" not in argv:
        return argv
    at = argv.index("--steps") + 1
    return [*argv[:at], str(min(int(argv[at]), max_steps)), *argv[at + 1 :]]


def run(workdir: Path, scratch: Path, pipeline_name: str, device: str, max_steps: int | None) -> None:
    from pillar_cli.cli import app
    from pillar_cli.training import sweep

    pipeline = load_pipeline(Path("examples.yaml"), pipeline_name, {"workdir": str(workdir)})
    classes = 100 if "cifar100" in pipeline_name else 10
    clock = StageClock()
    clock.wrap(sweep, "calibrate_noise", "noise calibration")
    clock.wrap(sweep, "spent_epsilon", "ε recomputation")
    start = time.perf_counter()
    synthetic_features(scratch / "features.npz", classes)
    clock.add("synthetic features", time.perf_counter() - start)
    embed = [
        "embed",
        "--source",
        "npz",
        "--path",
        str(scratch / "features.npz"),
        "--public-fraction",
        "0.1",
        "--val-fraction",
        "0",
        "-o",
        str(workdir / "emb.h5"),
    ]
    assert pipeline.steps[0][0] == "embed", "the pipeline's first step embeds the images"
    steps = [embed] + [
        capped(step, max_steps) + (["--device", device] if step[0] == "train-private" else [])
        for step in pipeline.steps[1:]
    ]
    grid_start = None
    for number, argv in enumerate(steps):
        if number == 1:
            grid_start = time.perf_counter()
        begin = time.perf_counter()
        try:
            app(argv, prog_name="pillar")
        except SystemExit as stop:
            if stop.code:
                raise SystemExit(f"step {number + 1} failed: pillar {' '.join(argv)}") from None
        clock.add(argv[0], time.perf_counter() - begin)
    total = time.perf_counter() - grid_start
    name = torch.cuda.get_device_name() if device != "cpu" and torch.cuda.is_available() else "CPU"
    runs = sum(step[0] == "train-private" for step in steps)
    print(
        f"\n{pipeline_name} grid ({runs} train-private runs + fit-pca + evaluate) on synthetic 45,000 x "
        f"2,048 private features, {classes} classes, train-private --device {device} ({name}, torch "
        f"{torch.__version__}):"
        f" {total:.1f} s end to end (embed of the synthetic features before it: {clock.seconds['embed']:.1f} "
        "s)" + ("" if max_steps is None else f"; SMOKE RUN, steps capped at {max_steps}")
    )
    for label in ("fit-pca", "train-private", "noise calibration", "ε recomputation", "evaluate"):
        print(f"  {label:<20} {clock.seconds[label]:8.1f} s over {clock.count[label]} calls")
    report = workdir / "figure4.md"
    if report.exists():
        print(report.read_text())


if __name__ == "__main__":
    main()
