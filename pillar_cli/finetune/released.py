"""A released fine-tuned network as a fitted scikit-learn estimator, `NetworkClassifier`: `predict` and
`predict_proba` are those of `pillar predict`, `ledger_` the release's privacy statement (release/loading.py
loads any release)."""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.embedding.networks import NetworkSpec, build_network, load_state, network_logits
from pillar_cli.errors import DataError, UsageError
from pillar_cli.methods.estimator import SoftmaxClassifier, class_labels


class NetworkClassifier(SoftmaxClassifier):
    """A network fine-tuned with DP-SGD (pillar finetune), released: it reads pixel rows (flattened HWC / 255,
    as a `pixels` embedding holds them) and is fitted only by `pillar finetune`."""

    def fit(self, X: np.ndarray, y: np.ndarray) -> NetworkClassifier:
        raise UsageError(
            "a NetworkClassifier is a released network: train one with pillar finetune, then pillar release"
        )

    @classmethod
    def from_classifier(cls, released: Classifier) -> NetworkClassifier:
        clf = cls()
        clf.spec_ = NetworkSpec.from_attrs(released.head["network"])
        clf.network_ = load_state(build_network(clf.spec_), released.network, "the released network").eval()
        clf.classes_ = class_labels(released.class_names)
        clf.ledger_ = released.privacy.ledger()
        clf.n_features_in_ = len(released.mean)
        return clf

    def logits(self, X: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "network_")
        rows = np.asarray(X, dtype=np.float32)
        if rows.ndim != 2 or rows.shape[1] != self.n_features_in_:
            raise DataError(f"the network reads rows of {self.n_features_in_} pixels; got shape {rows.shape}")
        return network_logits(self.network_, rows, self.spec_).astype(np.float64)
