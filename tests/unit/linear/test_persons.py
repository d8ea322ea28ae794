"""The person as the unit of DP-SGD (linear/persons.py): persons are sampled whole, and each person's sum of
row-clipped gradients is clipped again to C — checked against the per-row gradients written out with numpy."""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pillar_cli.linear.engine import RunConfig, _clipped_sums, train_linear_heads
from pillar_cli.linear.persons import PersonLayout
from pillar_cli.linear.rows import PrivateRows
from pillar_cli.privacy.unit import Units
from pillar_cli.randomness import NoiseSource


def _softmax_gradient(weights: np.ndarray, x: np.ndarray, label: int) -> np.ndarray:
    """(C, d + 1): the gradient of the softmax loss of one row for a head of (C, d + 1) weights and bias."""
    row = np.append(x, 1.0)
    logits = weights @ row
    p = np.exp(logits - logits.max())
    p /= p.sum()
    p[label] -= 1.0
    return np.outer(p, row)


def _clipped(gradient: np.ndarray, clip: float) -> np.ndarray:
    return gradient * min(1.0, clip / max(np.linalg.norm(gradient), 1e-300))


def test_a_person_of_one_row_trains_as_the_row_does():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((300, 5)).astype(np.float32), rng.integers(0, 3, 300)
    configs = [RunConfig(0.5, 20, 64, 0), RunConfig(0.1, 20, 64, 0)]
    by_row = train_linear_heads(x, y, 3, configs, [0.0, 0.0], 1.0, noise=NoiseSource(1))
    by_person = train_linear_heads(
        x,
        y,
        3,
        configs,
        [0.0, 0.0],
        1.0,
        noise=NoiseSource(1),
        units=Units.of(np.arange(300), 300, "persons of one row"),
    )
    for row, person in zip(by_row, by_person):
        np.testing.assert_allclose(person.weights, row.weights, rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16), persons=st.integers(1, 30), clip=st.floats(0.05, 5.0), heads=st.integers(1, 3)
)
def test_each_persons_gradient_sum_is_clipped_again_to_c(seed, persons, clip, heads):
    """The step's sum over the drawn persons equals Σ_p clip(Σ_{i∈p} clip(g_i)) computed row by row."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((60, 4)).astype(np.float32) * 3, rng.integers(0, 3, 60)
    person_of_row = rng.integers(0, persons, 60)
    layout = PersonLayout(person_of_row)
    rows = PrivateRows(x, y, clip, torch.device("cpu"), layout)
    weights = torch.from_numpy(rng.standard_normal((1, 3, heads, 5)).astype(np.float32))
    drawn = np.sort(rng.choice(len(layout), size=max(1, len(layout) // 2), replace=False))
    total = _clipped_sums(weights, rows, [torch.from_numpy(drawn)], [len(drawn)])[0].numpy()  # (C, G, d + 1)
    xs, ys = x[layout.order], y[layout.order]
    for g in range(heads):
        expected = np.zeros((3, 5))
        for person in drawn:
            members = range(layout.starts[person], layout.starts[person] + layout.counts[person])
            summed = sum(
                _clipped(_softmax_gradient(weights[0, :, g].numpy(), xs[i], ys[i]), clip) for i in members
            )
            expected += _clipped(summed, clip)
        np.testing.assert_allclose(total[:, g], expected, rtol=1e-4, atol=1e-5)


def test_removing_one_person_moves_a_step_by_at_most_c():
    """Neighbouring datasets under the person unit: the same drawn persons less one; the sums differ by ≤
    C."""
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((400, 8)).astype(np.float32) * 5, rng.integers(0, 4, 400)
    # persons of 20 rows: a row-level clip alone would allow 20·C
    person_of_row = np.repeat(np.arange(20), 20)
    weights = torch.from_numpy(rng.standard_normal((1, 4, 1, 9)).astype(np.float32))
    clip = 0.5
    whole = _clipped_sums(
        weights,
        PrivateRows(x, y, clip, torch.device("cpu"), PersonLayout(person_of_row)),
        [torch.arange(20)],
        [20],
    )
    for removed in range(20):
        kept = person_of_row != removed
        layout = PersonLayout(person_of_row[kept])
        rows = PrivateRows(x[kept], y[kept], clip, torch.device("cpu"), layout)
        less = _clipped_sums(weights, rows, [torch.arange(19)], [19])
        assert float(torch.linalg.vector_norm(whole - less)) <= clip * (1 + 1e-5)
    row_level = _clipped_sums(
        weights, PrivateRows(x, y, clip, torch.device("cpu")), [torch.arange(400)], [400]
    )
    row_level_less = _clipped_sums(
        weights, PrivateRows(x[20:], y[20:], clip, torch.device("cpu")), [torch.arange(380)], [380]
    )
    assert (
        float(torch.linalg.vector_norm(row_level - row_level_less)) > 2 * clip
    )  # what the row unit would allow


def test_a_batch_of_persons_is_their_rows_and_the_pairs_within_each():
    layout = PersonLayout(np.array([2, 0, 2, 1, 2, 0]))
    x = torch.arange(12, dtype=torch.float32).reshape(6, 2)
    layout.attach(x[layout.order])
    assert layout.counts.tolist() == [2, 1, 3]
    batch = layout.expand(np.array([2, 1]), torch.device("cpu"))
    assert (
        batch.rows.tolist() == [3, 4, 5, 2] and batch.person.tolist() == [0, 0, 0, 1] and batch.persons == 2
    )
    assert sorted(zip(batch.first.tolist(), batch.second.tolist())) == [(0, 1), (0, 2), (1, 2)]
    assert layout.order[batch.rows.numpy()].tolist() == [0, 2, 4, 3]  # the original rows of persons 2 and 1
    rows = x[layout.order][batch.rows]
    expected = [float(rows[i] @ rows[j]) + 1.0 for i, j in zip(batch.first.tolist(), batch.second.tolist())]
    assert batch.products.tolist() == expected  # x̃_i·x̃_j of each pair, computed once
