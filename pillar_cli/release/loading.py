"""A release loaded as a fitted scikit-learn estimator: a linear head's `DPLinearClassifier`, or a fine-tuned
network's `NetworkClassifier`; `predict` and `predict_proba` are those of `pillar predict`, `ledger_` the
release's privacy statement, `signature_` whether the file is signed and its signature verified (a warning
says so when it is not verified)."""

from __future__ import annotations

import warnings
from pathlib import Path

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.finetune.released import NetworkClassifier
from pillar_cli.methods.estimator import DPLinearClassifier
from pillar_cli.release.signing import trust_of


def estimator_of(released: Classifier) -> DPLinearClassifier | NetworkClassifier:
    """The fitted estimator of a classifier artifact already read."""
    return (NetworkClassifier if released.is_network else DPLinearClassifier).from_classifier(released)


def load(path: str | Path, key: str | Path | None = None) -> DPLinearClassifier | NetworkClassifier:
    """The classifier of a release (`pillar release`), fitted; `key`: the signer's public key (PEM), with
    which its signature must hold."""
    estimator = estimator_of(read_classifier(str(path)))
    trust = trust_of(Path(path), None if key is None else Path(key))
    if not trust.verified:
        warnings.warn(trust.line, UserWarning, stacklevel=2)
    estimator.signature_ = trust.line
    return estimator
