"""Side-by-side DP-SGD step throughput for linear heads, and a batched sweep against one-at-a-time runs.

Columns, all on the same features, the same Poisson sampling and the same (σ, clip):
  fast      pillar's exact engine (clip from ‖[x,1]‖·‖p − e_y‖, one matmul; no per-sample gradients)
  hooks     opacus GradSampleModule (per-sample gradients via hooks) + DPOptimizer — the reference path
  ghost     opacus ghost clipping (GradSampleModuleFastGradientClipping + DPOptimizerFastGradientClipping)
  sgd       non-private SGD (no clipping, no noise)
The engine's timing includes its own Poisson sampling and noise; the baselines' batches are drawn beforehand.
Run: python benchmarks/bench_train.py [--quick] [--device cpu|cuda] [--steps N] [--profile] [--persons]
--persons: only the table of the person as the privacy unit against the row (same rows a batch on average).
"""

from __future__ import annotations

import argparse
import itertools
import platform
import time
import warnings

import numpy as np
import torch

from pillar_cli.linear.engine import RunConfig, train_linear_heads
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import SECRET, NoiseSource

N_PRIVATE, SIGMA, CLIP, LR = 45_000, 2.0, 1.0, 0.1
DEVICE = torch.device("cpu")  # set by --device


def _timed(run) -> tuple[float, object]:
    """Wall-clock seconds of `run()` (the device's queue drained on both ends) and its result."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    result = run()
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start, result


def _poisson_batches(n: int, batch: int, steps: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        yield torch.nonzero(torch.rand(n, generator=generator) < batch / n).squeeze(1).to(DEVICE)


def time_fast(x, y, classes, batch, steps):
    seconds, _ = _timed(
        lambda: train_linear_heads(
            x, y, classes, [RunConfig(LR, steps, batch, 0)], [SIGMA], CLIP, device=str(DEVICE)
        )
    )
    return steps / seconds


def _time_torch_loop(step, x, y, batch, steps):
    """Batches are drawn before the clock starts: the baselines are timed without their sampling (pillar's
    engine is timed with its own), which can only flatter them."""
    batches = list(_poisson_batches(len(x), batch, steps, 0))

    def run():
        for index in batches:
            step(x[index], y[index])

    return steps / _timed(run)[0]


def time_hooks(x, y, classes, batch, steps):
    from opacus import GradSampleModule
    from opacus.optimizers import DPOptimizer

    model = GradSampleModule(torch.nn.Linear(x.shape[1], classes).to(DEVICE))
    optimizer = DPOptimizer(
        torch.optim.SGD(model.parameters(), lr=LR),
        noise_multiplier=SIGMA,
        max_grad_norm=CLIP,
        expected_batch_size=batch,
    )

    def step(xb, yb):
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return _time_torch_loop(step, x, y, batch, steps)


def time_ghost(x, y, classes, batch, steps):
    from opacus.grad_sample import GradSampleModuleFastGradientClipping
    from opacus.optimizers import DPOptimizerFastGradientClipping
    from opacus.utils.fast_gradient_clipping_utils import DPLossFastGradientClipping

    model = GradSampleModuleFastGradientClipping(
        torch.nn.Linear(x.shape[1], classes).to(DEVICE),
        max_grad_norm=CLIP,
        use_ghost_clipping=True,
        loss_reduction="mean",
    )
    optimizer = DPOptimizerFastGradientClipping(
        torch.optim.SGD(model.parameters(), lr=LR),
        noise_multiplier=SIGMA,
        max_grad_norm=CLIP,
        expected_batch_size=batch,
        loss_reduction="mean",
    )
    criterion = DPLossFastGradientClipping(model, optimizer, torch.nn.CrossEntropyLoss(), "mean")

    def step(xb, yb):
        criterion(model(xb), yb).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return _time_torch_loop(step, x, y, batch, steps)


def time_sgd(x, y, classes, batch, steps):
    model = torch.nn.Linear(x.shape[1], classes).to(DEVICE)
    optimizer = torch.optim.SGD(model.parameters(), lr=LR)

    def step(xb, yb):
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return _time_torch_loop(step, x, y, batch, steps)


def engines_table(steps: int, rounds: int = 3) -> None:
    print(
        f"\nDP-SGD steps/s, linear head, n = {N_PRIVATE}, Poisson batches, {steps} steps each, best of "
        f"{rounds} interleaved rounds (hooks: one round) (torch {torch.__version__}, {_device_name()})"
    )
    print(
        f"{'(d, C, B)':>18} {'fast':>8} {'hooks':>8} {'ghost':>8} {'sgd':>8} {'fast/hooks':>11} "
        f"{'fast/ghost':>11} {'sgd/fast':>9}"
    )
    for dim, classes, batch in [(2048, 10, 1024), (2048, 100, 1024), (40, 100, 1024)]:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(N_PRIVATE, dim, generator=generator).to(DEVICE)
        y = torch.randint(0, classes, (N_PRIVATE,), generator=generator).to(DEVICE)
        (
            time_fast(x, y, classes, batch, 5),
            time_ghost(x, y, classes, batch, 5),
            time_sgd(x, y, classes, batch, 5),
        )
        rates = {"hooks": time_hooks(x, y, classes, batch, steps)}  # one round: ~80 s at (2048, 100, 1024)
        for _ in range(
            rounds
        ):  # interleaved rounds, best of each: a slow spell of the machine hits all columns
            for name, fn in (("fast", time_fast), ("ghost", time_ghost), ("sgd", time_sgd)):
                rates[name] = max(rates.get(name, 0.0), fn(x, y, classes, batch, steps))
        print(
            f"{(dim, classes, batch)!s:>18} {rates['fast']:8.1f} {rates['hooks']:8.1f} {rates['ghost']:8.1f} "
            f"{rates['sgd']:8.1f} {rates['fast'] / rates['hooks']:10.1f}x "
            f"{rates['fast'] / rates['ghost']:10.2f}x {rates['sgd'] / rates['fast']:8.2f}x"
        )


def sweep_table(step_counts: list[int], rounds: int = 5) -> None:
    """45 configurations (3 lr × 5 step counts × 3 batch sizes), k = 40, C = 10: batched vs one at a time."""
    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.standard_normal((N_PRIVATE, 40)).astype(np.float32)).to(DEVICE)
    y = torch.from_numpy(rng.integers(0, 10, N_PRIVATE)).to(DEVICE)
    configs = [
        RunConfig(lr, t, b, 0)
        for lr, t, b in itertools.product((0.01, 0.1, 1.0), step_counts, (256, 512, 1024))
    ]
    sigmas = [3.0] * len(configs)

    # noise reproducible per configuration, so both columns must give the same weights
    seeded = NoiseSource(0)

    def batched():
        return train_linear_heads(x, y, 10, configs, sigmas, CLIP, device=str(DEVICE), noise=seeded)

    def one_at_a_time():
        return [
            train_linear_heads(x, y, 10, [c], [s], CLIP, device=str(DEVICE), noise=seeded)[0]
            for c, s in zip(configs, sigmas)
        ]

    timings = {batched: [], one_at_a_time: []}
    results = {}
    for _ in range(rounds):  # interleaved: a slow spell of the shared machine hits both columns alike
        for run in timings:
            seconds, results[run] = _timed(run)
            timings[run].append(seconds)
    batched_s, alone_s = min(timings[batched]), min(timings[one_at_a_time])
    per_round = sorted(a / b for a, b in zip(timings[one_at_a_time], timings[batched]))
    worst = max(
        float(np.abs(a.weights - b.weights).max()) for a, b in zip(results[batched], results[one_at_a_time])
    )
    print(
        f"\nsweep of {len(configs)} configurations (steps {step_counts}, batch 256/512/1024, k = 40, C = 10, "
        f"n = {N_PRIVATE}, {_device_name()}; best of {rounds} interleaved rounds): batched {batched_s:.2f} "
        "s, one at a time "
        f"{alone_s:.2f} s, speed-up {alone_s / batched_s:.1f}x (per round {per_round[0]:.1f}x to "
        f"{per_round[-1]:.1f}x), max |Δw| {worst:.1e}"
    )


def noise_table(rounds: int = 5, repeats: int = 200) -> None:
    """What independent noise per head costs a step: one draw per head from its own generator (the engine)
    against one draw of the whole (G, C, d + 1) buffer from one generator (shared state across heads)."""
    print(
        f"\nnoise per step, G heads of (C, d + 1) normals ({_device_name()}; best of {rounds} rounds of "
        f"{repeats} steps)"
    )
    print(f"{'(G, C, d)':>18} {'per head ms':>12} {'one draw ms':>12} {'ratio':>7}")
    for heads, classes, dim in [(45, 10, 40), (45, 10, 1024), (45, 100, 1024), (1, 100, 2048)]:
        buffer = torch.empty(heads, classes, dim + 1, device=DEVICE)
        generators = [SECRET.torch(DEVICE) for _ in range(heads)]

        def per_head():
            for generator, draw in zip(generators, buffer):
                torch.randn(draw.shape, generator=generator, out=draw)

        def one_draw():
            torch.randn(buffer.shape, generator=generators[0], out=buffer)

        best = {}
        for _ in range(rounds):
            for name, draw in (("per head", per_head), ("one draw", one_draw)):
                seconds, _ = _timed(lambda: [draw() for _ in range(repeats)])
                best[name] = min(best.get(name, float("inf")), 1e3 * seconds / repeats)
        print(
            f"{(heads, classes, dim)!s:>18} {best['per head']:12.3f} {best['one draw']:12.3f} "
            f"{best['per head'] / best['one draw']:6.2f}x"
        )


def persons_table(steps: int = 200, rounds: int = 3) -> None:
    """Steps/s with the person as the unit (persons of 1..30 rows, each person's gradient sum clipped again:
    the eager path on every device) against the row (on CUDA: the graphed path), at an expected batch of 1,024
    rows."""
    print(
        f"\nperson as the unit vs the row, n = {N_PRIVATE} rows in persons of 1..30 rows, 1,024 rows a batch "
        f"on average, {steps} steps, best of {rounds} rounds ({_device_name()})"
    )
    print(f"{'(d, C)':>12} {'rows':>9} {'persons':>9} {'ratio':>7}")
    generator = torch.Generator().manual_seed(0)
    persons = np.repeat(np.arange(N_PRIVATE), np.random.default_rng(0).integers(1, 31, N_PRIVATE))[:N_PRIVATE]
    per_batch = round(1024 * (persons.max() + 1) / N_PRIVATE)  # persons a batch for 1,024 rows on average
    for dim, classes in [(2048, 10), (2048, 100), (40, 100)]:
        x = torch.randn(N_PRIVATE, dim, generator=generator).to(DEVICE)
        y = torch.randint(0, classes, (N_PRIVATE,), generator=generator).to(DEVICE)
        best = {}
        for _ in range(rounds):
            for name, batch, units in (
                ("rows", 1024, Units.rows(N_PRIVATE)),
                ("persons", per_batch, Units.of(persons, N_PRIVATE, "synthetic persons")),
            ):
                seconds, _ = _timed(
                    lambda: train_linear_heads(
                        x,
                        y,
                        classes,
                        [RunConfig(LR, steps, batch, 0)],
                        [SIGMA],
                        CLIP,
                        device=str(DEVICE),
                        units=units,
                    )
                )
                best[name] = max(best.get(name, 0.0), steps / seconds)
        print(
            f"{(dim, classes)!s:>12} {best['rows']:9.1f} {best['persons']:9.1f} "
            f"{best['persons'] / best['rows']:6.2f}x",
            flush=True,
        )


def profile_fast(dim: int = 2048, classes: int = 10, batch: int = 1024, steps: int = 200) -> None:
    """Where a fast-engine step spends its time: torch.profiler's table of operators (CPU time, device
    time)."""
    from torch.profiler import ProfilerActivity, profile

    generator = torch.Generator().manual_seed(0)
    x = torch.randn(N_PRIVATE, dim, generator=generator).to(DEVICE)
    y = torch.randint(0, classes, (N_PRIVATE,), generator=generator).to(DEVICE)
    time_fast(x, y, classes, batch, 20)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE.type == "cuda" else [])
    with profile(activities=activities) as profiler:
        time_fast(x, y, classes, batch, steps)
    sort = "self_cuda_time_total" if DEVICE.type == "cuda" else "self_cpu_time_total"
    print(f"\nfast engine, {steps} steps at (d, C, B) = {(dim, classes, batch)}, operators by device time:")
    print(profiler.key_averages().table(sort_by=sort, row_limit=15))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer steps (a smoke run, noisier numbers)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where every column runs")
    parser.add_argument(
        "--profile", action="store_true", help="also print a profile of the fast engine's steps"
    )
    parser.add_argument(
        "--steps", type=int, default=None, help="steps per engines-table run (default 100; 20 quick)"
    )
    parser.add_argument("--persons", action="store_true", help="only the person-unit table")
    args = parser.parse_args()
    global DEVICE
    DEVICE = torch.device(args.device)
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    if args.persons:
        return persons_table()
    engines_table(steps=args.steps or (20 if args.quick else 100))
    sweep_table([20, 40, 60, 80, 100] if args.quick else [100, 200, 300, 400, 500])
    noise_table()
    if args.profile:
        for classes in (10, 100):
            profile_fast(classes=classes)


def _device_name() -> str:
    if DEVICE.type == "cuda":
        return torch.cuda.get_device_name(DEVICE)
    return f"CPU, {torch.get_num_threads()} threads, {platform.processor() or platform.machine()}"


if __name__ == "__main__":
    main()
