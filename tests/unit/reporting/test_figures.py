"""Figures keep their text inside the image."""

from __future__ import annotations

import matplotlib.pyplot as plt

from pillar_cli.reporting import figures


def test_a_long_title_is_wrapped_inside_the_figure(tmp_path, monkeypatch):
    kept = []
    monkeypatch.setattr(plt, "close", kept.append)  # the figure as saved, not closed
    title = (
        "accuracy vs k on emb.h5:test (n = 45,000 private rows, δ = 1e-05, prv accountant, 3 seeds, selected "
        "on val outside ε; non-private runs at ε = ∞; noise from fresh OS entropy)"
    )
    rows = [
        {"method": "pillar", "epsilon": 1.0, "k": k, "accuracy_mean": 0.8, "accuracy_std": 0.01}
        for k in (5, 20)
    ]
    figures.accuracy_vs_k(rows, tmp_path / "f.png", title, full_dim=64)
    (figure,) = kept
    renderer = figure.canvas.get_renderer()
    shown = figure.axes[0].title
    box = shown.get_window_extent(renderer)
    assert shown.get_text().replace("\n", " ") == title and "\n" in shown.get_text()
    assert box.x0 >= 0 and box.x1 <= figure.bbox.x1 and box.y1 <= figure.bbox.y1
