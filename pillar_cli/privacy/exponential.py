"""The exponential mechanism (McSherry & Talwar), the generic private learner of Kasiviswanathan et al.:
candidate c is chosen with probability ∝ exp(ε·score(c) / 2Δ), Δ the scores' sensitivity.

It is sampled as report-noisy-max with Gumbel noise of scale 2Δ/ε (the Gumbel-max trick: the argmax of
score·ε/2Δ + G, G standard Gumbel, is distributed as the softmax of score·ε/2Δ), so candidates can be scored
in chunks and never held all at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def selection_probabilities(scores: np.ndarray, epsilon: float, sensitivity: float) -> np.ndarray:
    """The closed form: softmax(ε·score / 2Δ)."""
    logits = epsilon * np.asarray(scores, dtype=np.float64) / (2.0 * sensitivity)
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def exponential_mechanism(
    score_chunks: Iterable[np.ndarray], epsilon: float, sensitivity: float, rng: np.random.Generator
) -> tuple[int, float]:
    """(index, score) of the candidate the mechanism picks among the concatenated chunks; ε = inf picks the
    best score (ties to the first)."""
    scale = 0.0 if math.isinf(epsilon) else 2.0 * sensitivity / epsilon
    best, best_noisy, best_score, offset = -1, -math.inf, math.nan, 0
    for scores in score_chunks:
        noisy = scores + scale * rng.gumbel(size=len(scores)) if scale else scores.astype(np.float64)
        top = int(np.argmax(noisy))
        if noisy[top] > best_noisy:
            best, best_noisy, best_score = offset + top, float(noisy[top]), float(scores[top])
        offset += len(scores)
    if best < 0:
        raise ValueError("the exponential mechanism needs at least one candidate")
    return best, best_score
