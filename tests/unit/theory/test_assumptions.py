"""Large-margin low-rank diagnostics against direct computations: ξ_k, Theorem 1's terms."""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.theory.assumptions import (
    AssumptionTable,
    eigengaps,
    svm_tasks,
    theorem_recommended_k,
    theorem_terms,
    xi,
)


def test_xi_matches_a_direct_projection():
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.standard_normal((10, 3)))
    w = rng.standard_normal((4, 10))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    direct = [1 - np.linalg.norm(basis @ basis.T @ row) for row in w]
    np.testing.assert_allclose(xi(basis, w), direct, atol=1e-12)
    np.testing.assert_allclose(eigengaps(np.array([5.0, 3.0, 2.5]), [1, 2, 3]), [2.0, 0.5, 2.5])


def test_theorem_terms_follow_their_formulas():
    table = AssumptionTable(
        ks=[2, 8],
        xi=np.array([[0.1, 0.05]]),
        margin_full=np.array([0.5]),
        margin_projected=np.array([[0.4, 0.45]]),
        eigengap=np.array([0.2, 0.01]),
        explained=np.array([0.5, 0.9]),
    )
    rows = theorem_terms(table, epsilon=0.5, alpha=0.1, beta=0.05)
    zeta = 0.5 * (1 - 0.1 - 0.05)
    assert math.isclose(rows[0]["zeta"], zeta)
    assert math.isclose(rows[0]["unlabelled_term"], math.log(40) / (0.25 * 0.04))
    assert math.isclose(rows[0]["labelled_term"], math.sqrt(2) / (0.1 * 0.5 * zeta))
    assert theorem_recommended_k(rows) == 2


def test_an_svm_stopped_at_its_iteration_cap_is_named_once_not_warned_by_scikit_learn(monkeypatch, recwarn):
    """scikit-learn's ConvergenceWarning reached the user as two raw lines per class pair; the diagnosis names
    the tasks whose w* is approximate in one sentence instead."""
    from pillar_cli.projection import PublicPCA
    from pillar_cli.theory import assumptions
    from pillar_cli.theory.diagnostics import diagnose

    rng = np.random.default_rng(0)
    labels = np.repeat([0, 1, 2], 40)
    features = rng.normal(size=(120, 30)) + labels[:, None]
    basis = PublicPCA(10).fit(rng.normal(size=(200, 30)))
    monkeypatch.setattr(assumptions, "SVM_ITERATIONS", 1)
    monkeypatch.setattr("pillar_cli.theory.diagnostics.SVM_ITERATIONS", 1)
    summary = diagnose(features, labels, basis, [2, 5]).summary
    assert summary["approximate_directions"] == (
        "the SVM of 3 of 3 tasks (0-vs-1, 0-vs-2, 1-vs-2) stopped at 1 iterations without converging: their "
        "w*, and the ξ_k and margins read from it, are approximate"
    )
    assert not [w for w in recwarn if "converge" in str(w.message)]
    monkeypatch.undo()
    assert "approximate_directions" not in diagnose(features, labels, basis, [2, 5]).summary


class _CountedRows:
    """Rows handed out on request, as rows left in a file are (StoredRows), remembering which were asked
    for."""

    def __init__(self, rows: np.ndarray):
        self.rows, self.read = rows, []

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index):
        self.read.append(np.arange(len(self.rows))[index])
        return self.rows[index]

    def __array__(self, dtype=None, copy=None):
        self.read.append(np.arange(len(self.rows)))
        return self.rows if dtype is None else self.rows.astype(dtype)


def test_class_pairs_read_only_their_classes_rows_and_give_what_the_whole_split_gives():
    """w* of a sample of class pairs needs the rows of those classes alone: the diagnosis reads only them from
    rows left on disk, and its table equals the one computed from the split in memory, bit for bit."""
    from sklearn.datasets import load_digits

    from pillar_cli.projection import PublicPCA
    from pillar_cli.theory.diagnostics import diagnose

    x, y = load_digits(return_X_y=True)
    basis = PublicPCA(20).fit(x[1000:])
    stored = _CountedRows(x[:1000])
    on_disk = diagnose(stored, y[:1000], basis, [5, 20], pairs=3, seed=1)
    in_memory = diagnose(x[:1000], y[:1000], basis, [5, 20], pairs=3, seed=1)
    pairs = svm_tasks(y[:1000], "pairs", 3, seed=1)
    classes = sorted({c for pair in pairs for c in pair})
    assert len(pairs) == 3 and len(classes) < 10 and on_disk.table.xi.shape == (3, 2)
    np.testing.assert_array_equal(np.concatenate(stored.read), np.flatnonzero(np.isin(y[:1000], classes)))
    for field in ("xi", "margin_full", "margin_projected", "eigengap", "explained"):
        np.testing.assert_array_equal(getattr(on_disk.table, field), getattr(in_memory.table, field))
    assert on_disk.summary == in_memory.summary
    ovr = _CountedRows(x[:1000])
    diagnose(ovr, y[:1000], basis, [5], mode="ovr")
    # one class against the rest: all
    np.testing.assert_array_equal(np.concatenate(ovr.read), np.arange(1000))
