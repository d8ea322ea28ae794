"""The assumptions artifact: per k, ξ_k and normalised margins per max-margin task, the public eigengap; the
summary (recommended k, Theorem 1's terms) and which split's labels were used, as attributes."""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts.core import Artifact


def assumptions_artifact(
    ks: list[int],
    xi: np.ndarray,
    margin_full: np.ndarray,
    margin_projected: np.ndarray,
    eigengap: np.ndarray,
    summary: dict,
    labels_used: str,
    mode: str,
) -> Artifact:
    return Artifact(
        "assumptions",
        {
            "k": np.array(ks),
            "xi": xi,
            "margin_full": margin_full,
            "margin_projected": margin_projected,
            "eigengap": eigengap,
        },
        {"summary": summary, "labels_used": labels_used, "mode": mode},
    )
