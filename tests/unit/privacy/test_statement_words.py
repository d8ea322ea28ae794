"""A statement's words are made by its guarantee from typed values (privacy/guarantee.py `Guarantee.words`):
the DP releases it rests on are its upstream releases, and a statement's stored basis and guarantee read back
as those values."""

from __future__ import annotations

import pytest

from pillar_cli.artifacts.statement import statement_words
from pillar_cli.privacy.basis import ChosenBy, StatementBasis
from pillar_cli.privacy.count import NOISY, Counted, RowCount
from pillar_cli.privacy.events import ExponentialEvent, GaussianEvent
from pillar_cli.privacy.guarantee import FLOATING_POINT, Guarantee
from pillar_cli.privacy.premises import Premises
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.unit import PrivacyUnit

NOISY_COUNT = RowCount(1000.4, NOISY, 12.5, 0.05, (1.0, 1e-5))
DP_PCA = DPRelease(
    released=Released.PROJECTION,
    mechanism="DP-PCA",
    epsilon=0.25,
    delta=1e-6,
    event=GaussianEvent(8.0),
    unit=PrivacyUnit(),
)
DP_GSD = DPRelease(
    released=Released.PUBLIC_CHOICE,
    mechanism="Bingham",
    epsilon=0.5,
    delta=0.0,
    event=ExponentialEvent(0.5),
    unit=PrivacyUnit(),
)
FULL = StatementBasis(
    trained_on=("private",),
    mechanism="DP-SGD",
    rule=(("k", "lr"), "R"),
    selected=ChosenBy.VAL,
    cells=3,
    premises=Premises(classes="source", splits="keyed", kept="all"),
)
BARE = StatementBasis(
    trained_on=("private", "val"), mechanism="", rule=None, selected=ChosenBy.ACCOUNTED, cells=1
)


def guarantee(count=NOISY_COUNT, unit=PrivacyUnit(), upstream=(), accountant="prv") -> Guarantee:
    return Guarantee(unit=unit, count=count, accountant=accountant, delta=1e-5, upstream=upstream)


def test_every_part_of_the_training_is_said_where_it_belongs():
    covers, not_covered, rests_on = guarantee(upstream=(DP_GSD, DP_PCA)).words(FULL)
    assert covers == [
        "training this head on the private split (DP-SGD)",
        "fitting the projection on the private rows (DP-PCA; ε = 0.25, δ = 1e-06, composed in)",
        NOISY_COUNT.describe(),
        "choosing its k, lr: a rule fixed in advance that reads no label, only the released count ñ and ε "
        "(R)",
        "choosing the public data: a DP-GSD release (Bingham; ε = 0.5, δ = 0, composed in)",
    ]
    assert not_covered == [
        "choosing its hyper-parameters on the private val split's labels (the paper's protocol)",
        "choosing this cell among the model's 3 (method, k, ε) cells, where that choice looked at val or "
        "test accuracies",
        FLOATING_POINT,
    ]
    assert rests_on == FULL.premises.rests_on() and len(rests_on) == 2


def test_a_public_projection_a_public_count_and_no_premises_are_named_not_covered():
    public = RowCount.exact(900, declared_public=True, of=Counted.PERSONS)
    covers, not_covered, rests_on = guarantee(
        public, PrivacyUnit("person", "column id"), accountant="rdp"
    ).words(BARE)
    assert covers == [
        "training this head on the private and val splits",
        "choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
        "private val split",
    ]
    assert (
        not_covered
        == [
            "the public data the projection was fitted on (public: not protected)",
            public.describe(),
            FLOATING_POINT,
        ]
        and "n = 900" in public.describe()
        and "persons" in public.describe()
    )
    assert rests_on == []


def test_a_public_choice_made_outside_dp_is_said_not_covered_in_its_own_words():
    basis = StatementBasis(
        trained_on=("private",),
        mechanism="",
        rule=None,
        selected=ChosenBy.NOTHING,
        cells=1,
        public_choice="public data chosen with non-private access to the private split",
    )
    assert guarantee(None).words(basis)[1] == [
        "the public data the projection was fitted on (public: not protected)",
        "public data chosen with non-private access to the private split",
        FLOATING_POINT,
    ]


def test_a_head_that_read_no_count_says_nothing_of_it():
    assert guarantee(None).words(BARE)[1] == [
        "the public data the projection was fitted on (public: not protected)",
        FLOATING_POINT,
    ]


@pytest.mark.parametrize("basis", [FULL, BARE], ids=["full", "bare"])
def test_a_stored_basis_and_guarantee_read_back_as_the_same_values_and_words(basis):
    made = guarantee(upstream=(DP_PCA,))
    statement = {"basis": basis.to_attrs(), "mechanism": basis.mechanism, "guarantee": made.to_attrs()}
    assert StatementBasis.of(statement) == basis
    assert StatementBasis.of(statement).to_attrs() == statement["basis"]
    assert Guarantee.from_attrs(made.to_attrs()) == made
    assert statement_words(statement) == made.words(basis)


def test_a_choice_pillar_does_not_know_is_refused_not_read_as_none():
    statement = {
        "basis": BARE.to_attrs() | {"selected": "by hand"},
        "mechanism": "",
        "guarantee": guarantee(RowCount.exact(10, declared_public=True)).to_attrs(),
    }
    with pytest.raises(ValueError, match="'by hand' is not a valid ChosenBy"):
        statement_words(statement)
