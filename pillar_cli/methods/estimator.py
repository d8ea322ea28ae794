"""DPLinearClassifier: one private linear head as a scikit-learn estimator, with its privacy ledger.

The projection is fitted only on the `public=` rows given to `fit`, or passed in already fitted; `fit` refuses
private rows that are among the rows the projection was fitted on. Every check of the CLI's train-private
applies (the same sweep code runs): ε > 0, δ < 1/n, at least two classes, finite features, clip > 0, a
positive lr.
"""

from __future__ import annotations

import sys
import warnings
from types import FrameType
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.artifacts.classifier_file import read_classifier
from pillar_cli.artifacts.embeddings import Split
from pillar_cli.artifacts.given_rows import given_rows
from pillar_cli.artifacts.statement import make_statement
from pillar_cli.errors import DataError, UsageError
from pillar_cli.linear.engine import LinearHead
from pillar_cli.methods.arrangement import arrange
from pillar_cli.methods.base import head_rows
from pillar_cli.methods.catalog import DEFAULT_METHOD, get_method
from pillar_cli.methods.class_set import class_set
from pillar_cli.methods.data import GivenRows
from pillar_cli.methods.grid import AUTO, DEFAULT_BATCH
from pillar_cli.methods.public_rows import fitted_projection, refuse_fitted_rows, refuse_privately_scaled
from pillar_cli.methods.request import SweepRequest
from pillar_cli.methods.rules import rule_record
from pillar_cli.methods.sweep import run_sweep
from pillar_cli.privacy.basis import ChosenBy, StatementBasis
from pillar_cli.privacy.unit import Units
from pillar_cli.projection import PublicPCA, StoredMap
from pillar_cli.randomness import NoiseSource


class PrivacyWarning(UserWarning):
    """A use of the library that spends privacy outside the ε it reports."""


def warn_if_seeded(noise_seed: int | None) -> None:
    """A seeded noise source is for experiments: its noise repeats, so anyone holding the seed removes it."""
    if noise_seed is not None:
        warnings.warn(
            f"noise_seed={noise_seed}: the noise repeats from the seed, so the result is NOT differentially "
            "private (its ledger's noise_reproducible is True; epsilon_spent is what secret noise would "
            "spend)",
            PrivacyWarning,
            stacklevel=3,
        )


class SoftmaxClassifier(ClassifierMixin, BaseEstimator):
    """A classifier whose probabilities are the softmax of its logits (float64), as `pillar predict` computes
    them; `classes_` names the classes. `decision_function` follows scikit-learn: one column per class, or for
    two classes the second's logit less the first's."""

    def logits(self, X: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def decision_function(self, X: np.ndarray) -> np.ndarray:
        logits = self.logits(X)
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        logits = self.logits(X)
        exp = np.exp(logits - logits.max(axis=1, keepdims=True))
        return exp / exp.sum(axis=1, keepdims=True)

    def predict(self, X: np.ndarray) -> np.ndarray:
        scores = self.logits(X)  # refuses an unfitted classifier first
        return self.classes_[scores.argmax(axis=1)]


class DPLinearClassifier(SoftmaxClassifier):
    """A linear softmax head trained with DP-SGD on the top-k public components (method="pillar") or a
    baseline.

    k, lr and steps "auto" (the defaults, as train-private's): the default rule of methods/rules.py, set from
    n, ε and the batch size and reading no label; `steps` None: the method's default (500 DP-SGD steps;
    noisy-sgd: n²); `batch_size` None: every row in every step. `method_options`: the method's options (e.g.
    NoisySGDOptions(zeta=0.2); None: its defaults). `seed` seeds public randomness only; the noise is secret
    (fresh OS entropy), so two fits differ, unless `noise_seed` is set: an experiment-only switch whose
    classifier is NOT differentially private. Everything derived from the number of rows (the sampling rate,
    the rule) reads a noisy count released inside ε (privacy/count.py), unless `n_public` declares that number
    public knowledge. `epsilon` None: 1, unless `max_tpr` (with `at_fpr`, default 0.01) replaces ε by a risk
    target: ε is calibrated so that no membership attack on one unit reaches that true-positive rate at that
    false-positive rate (privacy/risk_target.py); giving both is refused. `classes` declares the class set
    (public knowledge, e.g. the diagnoses a study records); None reads it off y, which the ledger lists as not
    covered: a label only one private row holds adds a class the head shows. A split read from a file brings
    its file's declared classes.

    Example:
        clf = DPLinearClassifier(k=20, epsilon=1.0, steps=300, batch_size=256).fit(X, y, public=X_public)
        clf.score(X_test, y_test), clf.ledger_.epsilon_spent
    """

    def __init__(
        self,
        method: str = DEFAULT_METHOD,
        k: int | str | None = AUTO,
        epsilon: float | None = None,
        delta: float = 1e-5,
        accountant: str = "prv",
        clip: float = 1.0,
        lr: float | str = AUTO,
        steps: int | str | None = AUTO,
        batch_size: int | None = DEFAULT_BATCH,
        seed: int = 0,
        projection: PublicPCA | None = None,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        device: str = "cpu",
        ridge: float | None = None,
        noise_seed: int | None = None,
        method_options: Any = None,
        n_public: bool = False,
        privacy_unit: str = "auto",
        max_tpr: float | None = None,
        at_fpr: float = 0.01,
        classes: Any = None,
    ):
        self.method, self.k, self.epsilon, self.delta, self.accountant = method, k, epsilon, delta, accountant
        self.clip, self.lr, self.steps, self.batch_size, self.seed = clip, lr, steps, batch_size, seed
        self.projection, self.momentum, self.weight_decay, self.device = (
            projection,
            momentum,
            weight_decay,
            device,
        )
        self.ridge, self.noise_seed, self.method_options, self.n_public = (
            ridge,
            noise_seed,
            method_options,
            n_public,
        )
        self.privacy_unit, self.max_tpr, self.at_fpr, self.classes = privacy_unit, max_tpr, at_fpr, classes

    def fit(
        self,
        X: np.ndarray | Split,
        y: np.ndarray | None = None,
        public: np.ndarray | Split | None = None,
        groups: Any = None,
    ) -> DPLinearClassifier:
        """Train on the private rows (X, y); `public`: unlabelled public rows for the projection (and GEP);
        `groups`: each row's person (a patient id per row): with privacy_unit "auto" or "person" the guarantee
        is then per person, all their rows together (privacy/guarantee.py). X may be a split read from a file
        (pillar_cli.read_split): its labels and the persons it records come with it (per row only with
        privacy_unit "row"). X and y are checked as scikit-learn checks them (2-D X, one label per row; a
        DataFrame's column names are kept in `feature_names_in_` and must match at predict time)."""
        searched = _inside_model_selection()
        if searched:
            warnings.warn(
                "choosing among DPLinearClassifier fits by their score on private labels (GridSearchCV, "
                "cross-validation) is outside ledger_.epsilon_spent, which covers one training; leave k, lr "
                "and steps 'auto' (the rule, which reads no label: inside ε), or choose lr and steps at the "
                "rule's k with pillar_cli.sweep(..., select='accounted') (inside ε)",
                PrivacyWarning,
                stacklevel=2,
            )
        warn_if_seeded(self.noise_seed)
        split = X if isinstance(X, Split) else None
        X, y, groups = given_rows(X, y, groups, self.privacy_unit)
        public_rows: np.ndarray | None = given_rows(public, None, None, labelled=False)[0]
        if y is None:
            raise UsageError(
                "DPLinearClassifier requires y to be passed, but the target y is None: give one label "
                "per row of X, or a labelled split read from a file"
            )
        labels_given = np.asarray(y)
        if labels_given.dtype.kind == "f" and not np.isfinite(labels_given).all():
            raise DataError(
                f"y has {int((~np.isfinite(labels_given)).sum())} NaN or infinite labels: every row needs "
                "a class"
            )
        x, y = validate_data(self, X, y, dtype=np.float32, ensure_all_finite=False)
        check_classification_targets(y)
        self.classes_, labels, premises = class_set(y, self.classes, split)
        method = get_method(self.method)
        refuse_privately_scaled(x, public_rows)
        self.projection_ = fitted_projection(self.projection, public_rows, [self.method], x.shape[1])
        refuse_fitted_rows(self.projection_, x)
        request = self.request()
        data = arrange(
            request,
            self.projection_,
            GivenRows(x, labels, Units.given(groups, len(x), "the groups given to fit")),
            None,
            len(self.classes_),
            public_x=None if public_rows is None else np.asarray(public_rows, dtype=np.float32),
        )
        result = run_sweep(data, request)
        run = result.runs[0]
        self.k_ = run.key.k if method.projects else None  # the head's own dimensions (None: all features)
        self.lr_, self.steps_ = run.key.lr, run.key.steps  # as the rule set them where they were "auto"
        self.normalises_rows_ = method.normalises_rows  # the head reads its k-dimensional rows at unit norm
        self.mapping_ = method.linear_map(self.projection_)
        self.head_ = run.head
        plan = result.plan
        rule = rule_record(plan.request.grid())
        basis = StatementBasis(
            trained_on=("private",),
            mechanism=method.mechanism_words(plan.unit),
            rule=None if rule is None else (tuple(rule["fields"]), rule["rule"]),
            selected=ChosenBy.SEARCH if searched else ChosenBy.NOTHING,
            cells=1,
            premises=premises,
        )
        self.statement_ = make_statement(
            guarantee=plan.guarantee.for_head(self.method in plan.readers),
            event=run.event,
            epsilon=run.epsilon_spent,
            epsilon_target=run.key.epsilon,
            steps=run.key.steps,
            clip=self.clip,
            basis=basis,
            noise=_noise_of(self.noise_seed),
            risk_target=plan.risk_target,
        )
        self.ledger_ = self.statement_.ledger()  # the statement a release of this head would carry
        return self

    def __sklearn_clone__(self) -> DPLinearClassifier:
        """A copy with the same parameters, unfitted — but a fitted `projection` stays fitted: it was fitted
        on public rows given beforehand, not on the rows a search or cross-validation will fit on
        (scikit-learn's clone would unfit it, and every fit of GridSearchCV would then fail)."""
        params = self.get_params(deep=False)
        return type(self)(
            **{
                name: value if name == "projection" else clone(value, safe=False)
                for name, value in params.items()
            }
        )

    def request(self) -> SweepRequest:
        """What `fit` asks the sweep to train: one configuration, its rows held out from nothing (no val
        rows)."""
        unprojected = get_method(self.method).single_cell or self.k is None  # all features
        return SweepRequest(
            method=(self.method,),
            k=(None,) if unprojected else self.k if isinstance(self.k, str) else (int(self.k),),  # type: ignore[arg-type]
            epsilon=None if self.epsilon is None else (float(self.epsilon),),
            delta=self.delta,
            accountant=self.accountant,
            clip=self.clip,
            lr=self.lr if isinstance(self.lr, str) else (float(self.lr),),
            steps=self.steps if self.steps is None or isinstance(self.steps, str) else (int(self.steps),),
            batch_size=(self.batch_size,),
            seed=(self.seed,),
            momentum=self.momentum,
            weight_decay=self.weight_decay,
            ridge=(self.ridge,),
            device=self.device,
            method_options={self.method: self.method_options},
            noise_seed=self.noise_seed,
            n_public=self.n_public,
            val="hold-out",
            privacy_unit=self.privacy_unit,
            max_tpr=self.max_tpr,
            at_fpr=self.at_fpr,
        )

    @property
    def coef_(self) -> np.ndarray:
        """(n_classes, n_features): the head mapped back through the basis, (A_k · w)ᵀ, acting on standardised
        features: logits(X) = projection_.standardized(X) @ coef_.T + intercept_ for DP-SGD heads. The
        closed-form heads (public-lda, dp-ls) read projected rows scaled to unit norm, so for them that
        identity holds row by row up to each row's scale."""
        weights = self.head_.weights if self.k_ is None else self.mapping_.basis(self.k_) @ self.head_.weights
        return weights.T

    @property
    def intercept_(self) -> np.ndarray:
        return self.head_.bias

    @classmethod
    def from_release(cls, path: str) -> DPLinearClassifier:
        """The classifier of a release (`pillar release`), fitted: `predict` and `predict_proba` are those of
        `pillar predict`, `ledger_` is its privacy statement, `classes_` its class names."""
        return cls.from_classifier(read_classifier(str(path)))

    @classmethod
    def from_classifier(cls, released: Classifier) -> DPLinearClassifier:
        """The estimator of a classifier artifact already read (artifacts.classifier.read_classifier)."""
        if released.is_network:
            raise UsageError(
                "the release holds a fine-tuned network, not a linear head: load it with pillar_cli.load"
            )
        head, statement = released.head, released.privacy
        clf = cls(
            method=head["method"],
            k=head["k"],
            epsilon=statement.epsilon_target,
            delta=statement.delta,
            accountant=statement.accountant,
            clip=statement.clip,
        )
        clf.classes_ = class_labels(released.class_names)
        clf.k_ = None if released.basis is None else released.basis.shape[1]
        clf.normalises_rows_ = bool(head["unit_rows"])
        clf.mapping_ = StoredMap(
            released.mean, released.scale, bool(head["row_l2_normalised"]), released.basis
        )
        clf.head_ = LinearHead(*released.linear)
        clf.ledger_ = statement.ledger()
        clf.n_features_in_ = len(released.mean)
        return clf

    def logits(self, X: np.ndarray) -> np.ndarray:
        """(n, C) float32 logits of the head, as `pillar predict` computes them."""
        check_is_fitted(self, "head_")
        x = validate_data(self, X, dtype=np.float32, reset=False)
        rows = head_rows(self.mapping_, x, self.k_, self.normalises_rows_)
        return self.head_.logits(rows)


def class_labels(names: list[str]) -> np.ndarray:
    """A release's classes as labels: integers when its classes are named by their numbers 0..C−1 (the labels
    of digits, MNIST, an integer column), so that predict returns what the labels were; their names
    otherwise."""
    numbered = [str(c) for c in range(len(names))] == list(names)
    return np.arange(len(names)) if numbered else np.array(names)


def _inside_model_selection() -> bool:
    """Whether scikit-learn's model selection (a search, cross-validation) is fitting this estimator: it keeps
    or scores fits by private labels, outside ε."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("sklearn.model_selection"):
            return True
        frame = frame.f_back
    return False


def _noise_of(noise_seed: int | None) -> dict:
    """Where a fit's noise came from, as a statement records it (never a secret seed)."""
    return NoiseSource(noise_seed).describe()
