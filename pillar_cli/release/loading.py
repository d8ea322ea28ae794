"""A release loaded as a fitted scikit-learn estimator: a linear head's `DPLinearClassifier`, or a fine-tuned
network's `NetworkClassifier`; `predict` and `predict_proba` are those of `pillar predict`, `ledger_` the release's
privacy statement."""

from __future__ import annotations

from pathlib import Path

from pillar_cli.artifacts.classifier import Classifier, read_classifier
from pillar_cli.finetune.released import NetworkClassifier
from pillar_cli.methods.estimator import DPLinearClassifier


def estimator_of(released: Classifier) -> DPLinearClassifier | NetworkClassifier:
    """The fitted estimator of a classifier artifact already read."""
    return (NetworkClassifier if released.is_network else DPLinearClassifier).from_classifier(released)


def load(path: str | Path) -> DPLinearClassifier | NetworkClassifier:
    """The classifier of a release (`pillar release`), fitted."""
    return estimator_of(read_classifier(str(path)))
