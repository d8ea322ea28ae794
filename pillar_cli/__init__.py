"""pillar: semi-private learning with low-rank public representations (PILLAR) and Gradient Subspace Distance.

The Python API, for notebooks and scripts; the `pillar` command line runs the same code on HDF5 artifacts.

    from pillar_cli import DPLinearClassifier
    clf = DPLinearClassifier(k=20, epsilon=1.0).fit(X_private, y_private, public=X_public)
    clf.score(X_test, y_test), clf.ledger_.epsilon_spent

    from pillar_cli import load
    clf = load("classifier.h5")  # a release (pillar release): one fitted classifier and its statement
    clf.predict(X_new), clf.ledger_.epsilon_spent, clf.ledger_.not_covered

    from pillar_cli import FinetuneConfig, NetworkSpec, finetune, network
    result = finetune(network(NetworkSpec("cnn", (28, 28, 1), 10)), images, labels, FinetuneConfig(epsilon=8.0))
    result.model, result.epsilon_spent

Calibrated noise multipliers are cached in the directory named by the environment variable PILLAR_CACHE_DIR
(default ~/.cache/pillar).
"""

from pillar_cli.artifacts import Artifact, read, read_split, write
from pillar_cli.embedding.networks import NetworkSpec
from pillar_cli.errors import ArtifactError, DataError, PillarError, PrivacyError, UsageError
from pillar_cli.finetune import FinetuneConfig, finetune, network
from pillar_cli.gsd.ranking import gradient_subspace_distance
from pillar_cli.gsd.releases import DPSettings
from pillar_cli.methods.accounted import AccountedSelection
from pillar_cli.methods.api import sweep
from pillar_cli.methods.catalog import METHODS
from pillar_cli.methods.estimator import DPLinearClassifier, Ledger, PrivacyWarning
from pillar_cli.privacy import ACCOUNTANTS, Event, calibrate_noise, event_from_dict, spent_epsilon
from pillar_cli.projection import GaussianProjection, PublicPCA
from pillar_cli.theory.diagnostics import diagnose
from pillar_cli.version import __version__

load = DPLinearClassifier.from_release

__all__ = ["ACCOUNTANTS", "METHODS", "AccountedSelection", "Artifact", "ArtifactError", "DPLinearClassifier",
           "DPSettings", "DataError", "Event", "FinetuneConfig", "GaussianProjection", "Ledger", "NetworkSpec",
           "PillarError", "PrivacyError", "PrivacyWarning", "PublicPCA", "UsageError", "__version__", "calibrate_noise", "diagnose",
           "event_from_dict", "finetune", "gradient_subspace_distance", "load", "network", "read", "read_split",
           "spent_epsilon", "sweep", "write"]
