"""Each method says why it cannot run on some rows under a request (Method.problems), from what it declares it
reads and cannot be put through; the plan refuses the first problem before anything private is drawn."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli.errors import UsageError
from pillar_cli.methods.capabilities import Cannot, Problem, Reads
from pillar_cli.methods.catalog import METHODS, get_method
from pillar_cli.methods.data import GivenRows, sweep_data
from pillar_cli.methods.plan import plan_sweep
from pillar_cli.methods.request import SweepRequest
from pillar_cli.privacy.unit import Units
from pillar_cli.projection import PublicPCA


@pytest.fixture(scope="module")
def rows():
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    pca = PublicPCA(10).fit(x[:300])
    return sweep_data(pca, GivenRows(x[300:], y[300:], Units.rows(len(x) - 300)), 10)


def test_a_method_lists_what_these_rows_and_this_request_lack(rows):
    assert get_method("pillar").problems(rows, SweepRequest()) == []
    assert get_method("public-lda").problems(rows, SweepRequest(method=("public-lda",))) == [
        Problem("method 'public-lda' needs the public split for the shared covariance")
    ]
    (seeded,) = get_method("noisy-sgd").problems(rows, SweepRequest(method=("noisy-sgd",), max_tpr=0.1))
    assert (
        seeded.message == "method 'noisy-sgd' draws its own mechanism, which a risk target cannot calibrate"
    )
    (averaged,) = get_method("em-components").problems(rows, SweepRequest(method=("em-components",), ema=0.9))
    assert str(averaged.error()) == "ema averages DP-SGD iterates; method 'em-components' has none to average"


def test_the_declarations_agree_with_what_each_method_does():
    """A method that reads no public rows is never refused for them; one that bounds persons says how."""
    for name, method in METHODS.items():
        assert set(method.reads) <= set(Reads) and set(method.cannot) <= set(Cannot), name
        assert bool(method.person_bound) == method.can(Cannot.BOUND_A_PERSON), name


def test_the_plan_refuses_the_first_problem_before_any_count(rows):
    with pytest.raises(UsageError, match=r"^method 'gep' needs the public split for its anchor subspace$"):
        plan_sweep(rows, SweepRequest(method=("gep",), epsilon=(1.0,), device="cpu"))
