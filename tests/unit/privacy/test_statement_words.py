"""A statement's words are made by its guarantee from typed values (privacy/guarantee.py `Guarantee.words`), and a
statement's stored basis reads back as those values and is written as it was stored."""

from __future__ import annotations

import pytest

from pillar_cli.artifacts.statement import statement_words
from pillar_cli.privacy.basis import ChosenBy, ProjectionRelease, PublicChoiceNote, StatementBasis
from pillar_cli.privacy.count import NOISY, Counted, RowCount
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.unit import PrivacyUnit
from pillar_cli.privacy.premises import Premises

NOISY_COUNT = RowCount(1000.4, NOISY, 12.5, 0.05, (1.0, 1e-5))
FULL = StatementBasis(trained_on=("private",), mechanism="DP-SGD", rule=(("k", "lr"), "R"), selected=ChosenBy.VAL,
                      cells=3, public_choice=PublicChoiceNote(True, "by DP-GSD"),
                      projection=ProjectionRelease("DP-PCA", 0.25, 1e-6),
                      premises=Premises(classes="source", splits="keyed", kept="all"))
BARE = StatementBasis(trained_on=("private", "val"), mechanism="", rule=None, selected=ChosenBy.ACCOUNTED, cells=1)


def test_every_part_of_the_training_is_said_where_it_belongs():
    covers, not_covered, rests_on = Guarantee(PrivacyUnit(), NOISY_COUNT, "prv", 1e-5).words(FULL)
    assert covers == [
        "training this head on the private split (DP-SGD)",
        "fitting the projection on the private rows (DP-PCA; ε = 0.25, δ = 1e-06, composed in)",
        NOISY_COUNT.describe(),
        "choosing its k, lr: a rule fixed in advance that reads no label, only the released count ñ and ε (R)",
        "choosing the public data: by DP-GSD"]
    assert not_covered == [
        "choosing its hyper-parameters on the private val split's labels (the paper's protocol)",
        "choosing this cell among the model's 3 (method, k, ε) cells, where that choice looked at val or test "
        "accuracies"]
    assert rests_on == FULL.premises.rests_on() and len(rests_on) == 2


def test_a_public_projection_a_public_count_and_no_premises_are_named_not_covered():
    public = RowCount.exact(900, declared_public=True, of=Counted.PERSONS)
    covers, not_covered, rests_on = Guarantee(PrivacyUnit("person", "column id"), public, "rdp", 1e-5).words(BARE)
    assert covers == ["training this head on the private and val splits",
                      "choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
                      "private val split"]
    assert not_covered == ["the public data the projection was fitted on (public: not protected)",
                           public.describe()] and "n = 900" in public.describe() and "persons" in public.describe()
    assert rests_on == []


def test_a_head_that_read_no_count_says_nothing_of_it():
    assert Guarantee(PrivacyUnit(), None, "prv", 1e-5).words(BARE)[1] == [
        "the public data the projection was fitted on (public: not protected)"]


@pytest.mark.parametrize("basis", [FULL, BARE], ids=["full", "bare"])
def test_a_stored_basis_reads_back_as_the_same_values_and_words(basis):
    statement = {"basis": basis.to_attrs(), "mechanism": basis.mechanism, "accountant": "prv", "delta": 1e-5,
                 "count": NOISY_COUNT.to_dict()}
    assert StatementBasis.of(statement) == basis
    assert StatementBasis.of(statement).to_attrs() == statement["basis"]
    assert statement_words(statement) == Guarantee(PrivacyUnit(), NOISY_COUNT, "prv", 1e-5).words(basis)


def test_a_choice_pillar_does_not_know_is_refused_not_read_as_none():
    statement = {"basis": BARE.to_attrs() | {"selected": "by hand"}, "mechanism": "", "accountant": "prv",
                 "delta": 1e-5, "count": RowCount.exact(10, declared_public=True).to_dict()}
    with pytest.raises(ValueError, match="'by hand' is not a valid ChosenBy"):
        statement_words(statement)
