"""One contract for every registered method (as timm's tests run every model): it trains on a tiny task it
accepts; the ε its model file claims is no less than Google's dp-accounting recomputes from the event tree the
file stores; its neighbouring relations are `Relation` values and its mechanism's words name them; and with
the person as the privacy unit it either bounds a person, in the words its `person_bound` gives, or refuses
with the registry's list of methods that do. A method added to the registry is checked here without a line of
this file changing."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pillar_cli import METHODS, sweep
from pillar_cli.artifacts import read, write
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.data.disjunctions import DisjunctionFamily
from pillar_cli.errors import DataError, UsageError
from pillar_cli.methods.base import Cannot
from pillar_cli.methods.catalog import bounding_persons
from pillar_cli.methods.data import PrivacySettings
from pillar_cli.methods.sweep import sweep_artifact
from pillar_cli.privacy.relation import Relation
from pillar_cli.privacy.unit import PERSON, PrivacyUnit, adjacency
from pillar_cli.projection import PublicPCA
from pillar_cli.projection.components import PublicComponents

DELTA = 1e-4


def digits(binary: bool) -> dict:
    """600 private digits (all ten classes, or 0 against 1), 400 public rows with their labels, the
    projection."""
    x, y = load_digits(return_X_y=True)
    if binary:
        x, y = x[y < 2], y[y < 2]
    order = np.random.default_rng(0).permutation(len(x))
    public, private = order[: len(x) // 3], order[len(x) // 3 :][:600]
    return {
        "X": x[private],
        "y": y[private],
        "projection": PublicPCA(20).fit(x[public]),
        "public": x[public],
        "public_labelled": (x[public], y[public]),
    }


def disjunctions() -> dict:
    """0/1 rows labelled by a planted disjunction, with the public component graph the disjunction learners
    read."""
    family = DisjunctionFamily(20, 3, 0.8, seed=0)
    rng = np.random.default_rng(0)
    x, y = family.sample(300, rng)
    return {
        "X": x.astype(np.float32),
        "y": y,
        "projection": PublicComponents().fit(family.sample(200, rng)[0].astype(np.float32)),
    }


TASKS = {"digits": lambda: digits(False), "binary digits": lambda: digits(True), "disjunctions": disjunctions}


@pytest.fixture(scope="module")
def tasks() -> dict[str, dict]:
    return {name: make() for name, make in TASKS.items()}


def trained(name: str, tasks: dict, by_person: bool = False) -> tuple[dict, object]:
    """(the first task the method accepts, its sweep at k = 10, ε = 1; `by_person`: persons of three rows
    each, the person the privacy unit); a method no task suits fails the test."""
    refusals = []
    for task_name, task in tasks.items():
        persons = {"groups": np.arange(len(task["X"])) // 3, "privacy_unit": PERSON} if by_person else {}
        try:
            return task, sweep(
                **task,
                method=[name],
                k=[None if task_name == "disjunctions" else 10],
                epsilon=[1.0],
                delta=DELTA,
                steps=[20],
                device="cpu",
                **persons,
            )
        except (DataError, UsageError) as refused:
            if "person" in str(refused):
                raise
            refusals.append(f"{task_name}: {refused}")
    pytest.fail(f"method '{name}' accepted none of the contract's tasks: {refusals}")


def stored(result, task: dict, tmp_path) -> object:
    """The model file the sweep makes, written and read back."""
    model = sweep_artifact(
        result,
        task["projection"],
        PrivacySettings(DELTA, unit=result.plan.unit),
        int(task["y"].max()) + 1,
        len(task["X"]),
    )
    return read(write(tmp_path / "model.h5", model).path, "model")


@pytest.mark.parametrize("name", list(METHODS))
def test_a_method_claims_no_less_than_dp_accounting_recomputes_and_names_its_relation(name, tasks, tmp_path):
    method = METHODS[name]
    assert method.relations and all(isinstance(relation, Relation) for relation in method.relations)
    task, result = trained(name, tasks)
    model = stored(result, task, tmp_path)
    checks = check_ledger(model)
    assert checks and all(check.epsilon_claimed <= 1.0 for check in checks)
    assert [check.problems for check in checks] == [[] for _ in checks], checks
    assert model.attrs["mechanisms"][name] == f"{method.mechanism_description}; {adjacency(method.relations)}"


@pytest.mark.parametrize("name", list(METHODS))
def test_a_method_bounds_a_person_or_refuses_with_the_registrys_list(name, tasks, tmp_path):
    method = METHODS[name]
    if not method.can(Cannot.BOUND_A_PERSON):
        with pytest.raises(UsageError) as refused:
            trained(name, tasks, by_person=True)
        assert str(refused.value) == (
            f"method '{name}' bounds one row's contribution, not one person's: with the "
            f"person as the privacy unit train {', '.join(bounding_persons())}"
        )
        return
    task, result = trained(name, tasks, by_person=True)
    model = stored(result, task, tmp_path)
    unit = PrivacyUnit(PERSON, "the groups given")
    assert result.plan.unit == unit and model.attrs["guarantee"]["unit"]["unit"] == PERSON
    assert model.attrs["mechanisms"][name] == method.mechanism_words(unit)
    assert model.attrs["mechanisms"][name].endswith(f"of one person; per person: {method.person_bound}")
    assert [check.problems for check in check_ledger(model)] == [[]]
