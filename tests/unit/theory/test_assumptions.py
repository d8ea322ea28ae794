"""Large-margin low-rank diagnostics against direct computations: ξ_k, Theorem 1's terms."""

from __future__ import annotations

import math

import numpy as np

from pillar_cli.theory.assumptions import AssumptionTable, eigengaps, theorem_recommended_k, theorem_terms, xi


def test_xi_matches_a_direct_projection():
    rng = np.random.default_rng(0)
    basis, _ = np.linalg.qr(rng.standard_normal((10, 3)))
    w = rng.standard_normal((4, 10))
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    direct = [1 - np.linalg.norm(basis @ basis.T @ row) for row in w]
    np.testing.assert_allclose(xi(basis, w), direct, atol=1e-12)
    np.testing.assert_allclose(eigengaps(np.array([5.0, 3.0, 2.5]), [1, 2, 3]), [2.0, 0.5, 2.5])


def test_theorem_terms_follow_their_formulas():
    table = AssumptionTable(ks=[2, 8], xi=np.array([[0.1, 0.05]]), margin_full=np.array([0.5]),
                            margin_projected=np.array([[0.4, 0.45]]), eigengap=np.array([0.2, 0.01]),
                            explained=np.array([0.5, 0.9]))
    rows = theorem_terms(table, epsilon=0.5, alpha=0.1, beta=0.05)
    zeta = 0.5 * (1 - 0.1 - 0.05)
    assert math.isclose(rows[0]["zeta"], zeta)
    assert math.isclose(rows[0]["unlabelled_term"], math.log(40) / (0.25 * 0.04))
    assert math.isclose(rows[0]["labelled_term"], math.sqrt(2) / (0.1 * 0.5 * zeta))
    assert theorem_recommended_k(rows) == 2


def test_an_svm_stopped_at_its_iteration_cap_is_named_once_not_warned_by_scikit_learn(monkeypatch, recwarn):
    """scikit-learn's ConvergenceWarning reached the user as two raw lines per class pair; the diagnosis names the
    tasks whose w* is approximate in one sentence instead."""
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
        "the SVM of 3 of 3 tasks (0-vs-1, 0-vs-2, 1-vs-2) stopped at 1 iterations without converging: their w*, "
        "and the ξ_k and margins read from it, are approximate")
    assert not [w for w in recwarn if "converge" in str(w.message)]
    monkeypatch.undo()
    assert "approximate_directions" not in diagnose(features, labels, basis, [2, 5]).summary
