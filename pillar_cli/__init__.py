"""pillar: semi-private learning with low-rank public representations (PILLAR) and Gradient Subspace Distance.

The Python API, for notebooks and scripts; the `pillar` command line runs the same code on HDF5 artifacts.

    from pillar_cli import DPLinearClassifier
    clf = DPLinearClassifier(k=20, epsilon=1.0).fit(X_private, y_private, public=X_public)
    clf.score(X_test, y_test), clf.ledger_.epsilon_spent

    from pillar_cli import DPPCA  # no public data: the projection from one DP release of the private rows
    clf = DPLinearClassifier(k=20, epsilon=1.0, projection=DPPCA(k_max=50, epsilon=0.5).fit(X_private))

    from pillar_cli import load clf = load("classifier.h5")  # a release (pillar release): one fitted
    classifier (a linear head or a network) clf.predict(X_new), clf.ledger_.epsilon_spent,
    clf.ledger_.not_covered

    from pillar_cli import FinetuneConfig, NetworkSpec, finetune, network result =
    finetune(network(NetworkSpec("cnn", (28, 28, 1), 10)), images, labels, FinetuneConfig(epsilon=8.0))
    result.model, result.epsilon_spent

Names are imported on first use (PEP 562), so that `import pillar_cli` and the command line start without
torch or scikit-learn. Calibrated noise multipliers are cached in the directory named by the environment
variable PILLAR_CACHE_DIR (default ~/.cache/pillar).
"""

import importlib
from typing import Any

from pillar_cli.version import __version__ as __version__

_HOMES = {  # public name → the module that defines it
    "Artifact": "pillar_cli.artifacts",
    "read": "pillar_cli.artifacts",
    "read_split": "pillar_cli.artifacts",
    "write": "pillar_cli.artifacts",
    "NetworkSpec": "pillar_cli.embedding.networks",
    "ArtifactError": "pillar_cli.errors",
    "DataError": "pillar_cli.errors",
    "PillarError": "pillar_cli.errors",
    "PrivacyError": "pillar_cli.errors",
    "UsageError": "pillar_cli.errors",
    "FinetuneConfig": "pillar_cli.finetune",
    "finetune": "pillar_cli.finetune",
    "network": "pillar_cli.finetune",
    "gradient_subspace_distance": "pillar_cli.gsd.ranking",
    "DPSettings": "pillar_cli.gsd.releases",
    "AccountedSelection": "pillar_cli.methods.accounted",
    "sweep": "pillar_cli.methods.api",
    "METHODS": "pillar_cli.methods.catalog",
    "DPLinearClassifier": "pillar_cli.methods.estimator",
    "Ledger": "pillar_cli.privacy.ledger",
    "PrivacyWarning": "pillar_cli.methods.estimator",
    "ACCOUNTANTS": "pillar_cli.privacy",
    "Event": "pillar_cli.privacy",
    "calibrate_noise": "pillar_cli.privacy",
    "event_from_dict": "pillar_cli.privacy",
    "spent_epsilon": "pillar_cli.privacy",
    "GaussianProjection": "pillar_cli.projection",
    "PublicPCA": "pillar_cli.projection",
    "DPPCA": "pillar_cli.projection.private_pca",
    "diagnose": "pillar_cli.theory.diagnostics",
    "load": "pillar_cli.release.loading",
    "NetworkClassifier": "pillar_cli.finetune.released",
}

__all__ = sorted([*_HOMES, "__version__"])


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'pillar_cli' has no attribute '{name}'")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
