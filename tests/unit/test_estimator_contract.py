"""The estimators keep scikit-learn's contract where users touch it: scikit-learn's own `check_estimator`,
clone and set_params without warnings (a search over fits is what warns), its input checks and messages,
column names, and a released classifier that predicts labels of the type it was trained on."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import load_digits
from sklearn.utils.estimator_checks import check_estimator

from pillar_cli import DPLinearClassifier, PublicPCA, sweep
from pillar_cli.artifacts import Artifact
from pillar_cli.methods.data import PrivacySettings
from pillar_cli.methods.estimator import class_labels
from pillar_cli.methods.sweep import sweep_artifact
from pillar_cli.release import release_classifier


@pytest.mark.parametrize(
    "estimator",
    [
        DPLinearClassifier(method="dpsgd", epsilon=math.inf, steps=20, batch_size=None, delta=1e-3),
        DPLinearClassifier(method="dpsgd", epsilon=8.0, steps=20, batch_size=None, delta=1e-3, noise_seed=0),
    ],
    ids=["non-private", "private, seeded noise"],
)
def test_scikit_learns_estimator_checks_pass(estimator):
    """Every check of scikit-learn's check_estimator passes (array-API input is skipped unless SCIPY_ARRAY_API
    is set). The private configuration seeds its noise, as comparing two fits needs (an experiment-only
    switch)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None)
    assert len(results) > 40
    assert [(r["check_name"], repr(r["exception"])[:200]) for r in results if r["status"] == "failed"] == []
    assert {r["check_name"] for r in results if r["status"] == "skipped"} <= {"check_array_api_input"}


@pytest.fixture(scope="module")
def digits():
    x, y = load_digits(return_X_y=True)
    return x[:300], x[300:1300], y[300:1300]


def test_clone_and_set_params_do_not_warn_and_public_pca_clones(digits):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy = clone(DPLinearClassifier(k=10)).set_params(method="dpsgd", epsilon=0.5)
        pca = clone(PublicPCA(20, second_moment=True))
    assert (copy.method, copy.epsilon) == ("dpsgd", 0.5)
    assert pca.get_params() == {"k_max": 20, "standardize": True, "second_moment": True}
    assert not hasattr(pca, "mean_") and not pca.standardizes  # stored as given; the fit knows what it means
    with pytest.raises(ValueError, match=r"^PublicPCA has no parameter k \(its parameters: k_max"):
        pca.set_params(k=3)


def test_inputs_are_checked_with_scikit_learns_messages(digits):
    public, x, y = digits
    clf = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=20)
    with pytest.raises(
        ValueError, match=r"^Found input variables with inconsistent numbers of samples: \[1000, 999\]"
    ):
        clf.fit(x, y[:-1], public=public)
    with pytest.raises(ValueError, match=r"^Expected 2D array, got 1D array instead"):
        clf.fit(x[:, 0], y, public=public)
    with pytest.raises(ValueError, match=r"^Unknown label type: continuous"):
        clf.fit(x, y + 0.5, public=public)


def test_column_names_are_recorded_and_reordered_columns_refused(digits):
    public, x, y = digits
    columns = [f"pixel{i}" for i in range(64)]
    frame = pd.DataFrame(x, columns=columns)
    clf = DPLinearClassifier(k=10, epsilon=1.0, delta=1e-4, steps=20).fit(frame, y, public=public)
    assert list(clf.feature_names_in_) == columns and clf.n_features_in_ == 64
    assert clf.predict(frame[:5]).shape == (5,)
    with pytest.raises(
        ValueError, match=r"^The feature names should match those that were passed during fit"
    ):
        clf.predict(frame[columns[::-1]])


def test_a_release_of_integer_labels_predicts_integers(digits):
    """Classes named by their numbers (digits, MNIST, an integer column) come back as integers, so score(X,
    y_int) works; named classes stay names."""
    public, x, y = digits
    result = sweep(x, y, public=public, k=[10], epsilon=[1.0], delta=1e-4, device="cpu")
    pca = PublicPCA(40).fit(public)
    model = sweep_artifact(
        result,
        pca,
        PrivacySettings(delta=1e-4),
        10,
        len(x),
        features={"class_names": [str(c) for c in range(10)], "feature_dim": 64},
    )
    model = Artifact("model", model.arrays, model.attrs, path="model.h5")
    released, _ = release_classifier(model, {}, None)
    clf = DPLinearClassifier.from_classifier(released)
    assert clf.classes_.dtype.kind == "i" and clf.predict(x[:3]).dtype.kind == "i"
    assert 0 <= clf.score(x, y) <= 1 and clf.score(x, y) == np.mean(clf.predict(x) == y)
    assert list(class_labels(["T-shirt/top", "Trouser"])) == ["T-shirt/top", "Trouser"]
    assert list(class_labels(["1", "0"])) == ["1", "0"]  # names that are numbers out of order stay names
