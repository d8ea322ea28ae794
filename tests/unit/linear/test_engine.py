"""The fast linear DP-SGD engine against opacus and a direct per-sample computation; batching is exact."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from pillar_cli.linear.engine import RunConfig, clipped_gradient_sum, train_linear_heads
from pillar_cli.linear.opacus_reference import opacus_clipped_gradient_sum, train_with_opacus
from pillar_cli.privacy.count import RowCount
from pillar_cli.randomness import NoiseSource

SEEDED = NoiseSource(7)  # reproducible noise: what the equalities below compare (NOT differentially private)


def _batch(n=64, d=20, classes=5, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=generator) * 2
    y = torch.randint(0, classes, (n,), generator=generator)
    w = torch.randn(d, classes, generator=generator) * 0.3
    b = torch.randn(classes, generator=generator) * 0.1
    return w, b, x, y


def _direct_clipped_sum(w, b, x, y, clip):
    """One backward pass per sample, clip, sum."""
    total_w, total_b = torch.zeros_like(w), torch.zeros_like(b)
    for xi, yi in zip(x, y):
        wi, bi = w.clone().requires_grad_(), b.clone().requires_grad_()
        torch.nn.functional.cross_entropy((xi @ wi + bi)[None], yi[None]).backward()
        norm = torch.sqrt(wi.grad.pow(2).sum() + bi.grad.pow(2).sum())
        factor = min(1.0, clip / norm.item())
        total_w += factor * wi.grad
        total_b += factor * bi.grad
    return total_w, total_b


@pytest.mark.parametrize("clip", [0.1, 1.0, 100.0])
def test_fast_clipped_sum_equals_direct_per_sample_and_opacus(clip):
    w, b, x, y = _batch()
    fast_w, fast_b = clipped_gradient_sum(w, b, x, y, clip)
    direct_w, direct_b = _direct_clipped_sum(w, b, x, y, clip)
    opacus_w, opacus_b = opacus_clipped_gradient_sum(w, b, x, y, clip)
    for fast, reference in ((fast_w, direct_w), (fast_b, direct_b), (fast_w, opacus_w), (fast_b, opacus_b)):
        scale = reference.abs().max().item()
        assert (fast - reference).abs().max().item() <= 1e-5 * scale


def test_opacus_path_equals_direct_per_sample_computation():
    w, b, x, y = _batch(seed=1)
    opacus_w, opacus_b = opacus_clipped_gradient_sum(w, b, x, y, 0.5)
    direct_w, direct_b = _direct_clipped_sum(w, b, x, y, 0.5)
    torch.testing.assert_close(opacus_w, direct_w, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(opacus_b, direct_b, rtol=1e-5, atol=1e-6)


def test_every_clipped_per_sample_gradient_respects_the_bound():
    w, b, x, y = _batch(n=1, seed=2)
    for i in range(32):
        w, b, x, y = _batch(n=1, seed=i)
        gw, gb = clipped_gradient_sum(w, b, x, y, 0.7)
        assert torch.sqrt(gw.pow(2).sum() + gb.pow(2).sum()).item() <= 0.7 + 1e-5


def test_batched_configurations_equal_one_at_a_time():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((300, 8)).astype(np.float32), rng.integers(0, 3, 300)
    configs = [
        RunConfig(0.5, 30, 40, 1),
        RunConfig(0.1, 50, 100, 2),
        RunConfig(1.0, 10, 20, 3),
        RunConfig(0.2, 70, 40, 1),
        RunConfig(0.3, 37, 40, 1, momentum=0.9, weight_decay=0.01),
    ]
    sigmas = [
        2.0,
        0.7,
        0.0,
        1.5,
        3.0,
    ]  # configurations 0, 3 and 4 share a seed and a batch size: common streams
    _assert_together_equals_alone(x, y, configs, sigmas, clip=1.0)


def test_the_engine_counts_the_steps_each_head_ran():
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((200, 5)).astype(np.float32), rng.integers(0, 3, 200)
    configs = [RunConfig(0.1, steps, 40, seed) for steps in (7, 33, 70) for seed in (0, 1)]
    heads = train_linear_heads(x, y, 3, configs, [1.0] * len(configs), 1.0)
    assert [head.steps_run for head in heads] == [c.steps for c in configs]


def test_a_grid_steps_its_streams_together_and_equals_one_at_a_time():
    """Four (seed, batch size) streams with one schedule run side by side in one residual tensor."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((400, 6)).astype(np.float32), rng.integers(0, 3, 400)
    configs = [
        RunConfig(lr, t, b, s, 0.5, 0.01)
        for lr, t, b, s in itertools.product((0.1, 0.7), (15, 40), (25, 60), (0, 1))
    ]
    _assert_together_equals_alone(x, y, configs, np.linspace(0.5, 2.0, len(configs)).tolist(), clip=0.8)


def _assert_together_equals_alone(x, y, configs, sigmas, clip):
    together = train_linear_heads(x, y, 3, configs, sigmas, clip=clip, noise=SEEDED)
    for config, sigma, head in zip(configs, sigmas, together):
        alone = train_linear_heads(x, y, 3, [config], [sigma], clip=clip, noise=SEEDED)[0]
        np.testing.assert_allclose(head.weights, alone.weights, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(head.bias, alone.bias, rtol=1e-5, atol=1e-6)


def test_non_private_training_learns_a_separable_problem():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((400, 5)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    head = train_linear_heads(x, y, 2, [RunConfig(1.0, 300, 100, 0)], [0.0], clip=None)[0]
    assert head.accuracy(x, y) > 0.97


@pytest.mark.parametrize(
    "clip, momentum, decay, ema",
    [(1.0, 0.0, 0.0, 0.0), (0.3, 0.9, 0.01, 0.0), (None, 0.5, 0.0, 0.0), (1.0, 0.0, 0.0, 0.9)],
)
def test_opacus_engine_follows_the_fast_engine_when_noise_is_off(clip, momentum, decay, ema):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((500, 12)).astype(np.float32), rng.integers(0, 4, 500)
    config = RunConfig(0.5, 40, 64, 3, momentum, decay, ema=ema)
    fast = train_linear_heads(x, y, 4, [config], [0.0], clip, noise=SEEDED)[0]
    reference = train_with_opacus(x, y, 4, config, 0.0, clip, noise=SEEDED)
    np.testing.assert_allclose(fast.weights, reference.weights, atol=1e-5)
    np.testing.assert_allclose(fast.bias, reference.bias, atol=1e-5)


def test_poisson_sampler_selects_each_row_with_probability_q():
    from pillar_cli.linear.sampling import PoissonSampler

    sampler = PoissonSampler(1000, 0.05, torch.Generator().manual_seed(0))
    batches = sampler.batches(2000)
    counts = np.bincount(batches[batches < 1000].numpy(), minlength=1000) / 2000
    sizes = (batches < 1000).sum(1).numpy()
    assert (
        abs(counts.mean() - 0.05) < 0.001 and counts.std() < 0.01
    )  # Binomial(2000, 0.05)/2000 has sd 0.0049
    assert abs(sizes.mean() - 50) < 0.5 and abs(sizes.std() - np.sqrt(1000 * 0.05 * 0.95)) < 0.5
    assert all(np.all(np.diff(b[b < 1000].numpy()) > 0) for b in batches[:20])  # distinct, increasing


def test_warm_start_is_the_initial_head():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((200, 6)).astype(np.float32), rng.integers(0, 3, 200)
    init = (rng.standard_normal((6, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32))
    fast = train_linear_heads(x, y, 3, [RunConfig(0.0, 5, 32, 0)], [1.0], 1.0, init=init)[0]
    reference = train_with_opacus(x, y, 3, RunConfig(0.0, 5, 32, 0), 1.0, 1.0, init)
    for head in (fast, reference):
        np.testing.assert_allclose(head.weights, init[0], atol=1e-6)
        np.testing.assert_allclose(head.bias, init[1], atol=1e-6)


def _graphed_on_cpu(x, y, classes, configs, sigmas, clip):
    """The GPU path's static-shape steps (graphed.py), run eagerly on the CPU: one stream per (seed, batch
    size)."""
    from pillar_cli.linear.engine import SAMPLING_CHUNK_STEPS, _Stream
    from pillar_cli.linear.graphed import GraphedLockstep, PaddedRows

    rows = PaddedRows(x, y, clip, torch.device("cpu"))
    keys = sorted({(c.seed, c.batch_size) for c in configs})
    streams = [
        _Stream.build(
            [c for c in configs if (c.seed, c.batch_size) == key],
            [s for c, s in zip(configs, sigmas) if (c.seed, c.batch_size) == key],
            clip,
            len(x),
            RowCount.exact(len(x)),
            torch.device("cpu"),
            SEEDED,
        )
        for key in keys
    ]
    lockstep = GraphedLockstep(streams, rows, classes, None, SAMPLING_CHUNK_STEPS)
    heads = lockstep.train()
    _graphed_on_cpu.steps_taken = lockstep.steps_taken
    return streams, heads[..., : x.shape[1]], heads[..., x.shape[1]]


def test_static_shape_steps_of_the_gpu_path_equal_the_eager_engine_without_noise():
    """Padding batches with the zero row and freezing finished heads changes nothing (σ = 0: the same
    batches)."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((700, 10)).astype(np.float32), rng.integers(0, 4, 700)
    for clip in (0.7, None):
        configs = [
            RunConfig(lr, t, b, 0, m, wd)
            for lr, t, b, (m, wd) in itertools.product(
                (0.2, 0.9), (30, 75), (50, 90), ((0.0, 0.0), (0.6, 0.02))
            )
        ]
        configs = sorted(configs, key=lambda c: -c.steps)
        streams, weights, bias = _graphed_on_cpu(x, y, 4, configs, [0.0] * len(configs), clip)
        for s, stream in enumerate(streams):
            for g, config in enumerate(stream.configs):
                eager = train_linear_heads(x, y, 4, [config], [0.0], clip, noise=SEEDED)[0]
                assert (
                    eager.steps_run == _graphed_on_cpu.steps_taken[s, g] == config.steps
                )  # counted, both paths
                np.testing.assert_allclose(weights[s, g].T.numpy(), eager.weights, rtol=1e-4, atol=1e-6)
                np.testing.assert_allclose(bias[s, g].numpy(), eager.bias, rtol=1e-4, atol=1e-6)


def test_static_shape_steps_add_noise_of_the_calibrated_scale():
    """All-zero features: after one step every weight is −lr/(q·n)·σ·C times a standard normal."""
    x, y = np.zeros((3000, 400), np.float32), np.arange(3000) % 5
    _, weights, _ = _graphed_on_cpu(x, y, 5, [RunConfig(0.2, 1, 300, 4)], [2.5], 0.8)
    draws = weights.numpy() / (-0.2 / 300 * 2.5 * 0.8)
    assert abs(draws.mean()) < 0.03 and abs(draws.std() - 1.0) < 0.03  # 2,000 standard normals


def test_ema_releases_the_moving_average_of_the_iterates():
    """β-average of the iterates w_1..w_T, from w_0 = 0, written out from the last iterates of runs of 1..T
    steps (a run of t steps is the first t steps of a longer run on the same seed); batched with a run without
    it."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((300, 6)).astype(np.float32), rng.integers(0, 3, 300)
    beta, steps = 0.8, 12
    iterates = [
        train_linear_heads(x, y, 3, [RunConfig(0.3, t, 50, 5)], [0.5], 1.0, noise=SEEDED)[0]
        for t in range(1, steps + 1)
    ]
    average = np.zeros((6, 3))
    for head in iterates:
        average = beta * average + (1 - beta) * head.weights
    averaged, last = train_linear_heads(
        x,
        y,
        3,
        [RunConfig(0.3, steps, 50, 5, ema=beta), RunConfig(0.3, steps, 50, 5)],
        [0.5, 0.5],
        1.0,
        noise=SEEDED,
    )
    np.testing.assert_allclose(averaged.weights, average, atol=1e-5)
    np.testing.assert_allclose(last.weights, iterates[-1].weights, atol=1e-6)
