"""A model's record: the one typed description of a model's shared attributes, which writers build, every
stage reads and the schema's table is made from; its guarantee is the plan's one record, stored as one
attribute."""

from __future__ import annotations

import pytest

from pillar_cli.artifacts import Artifact, FeatureRecipe
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord, PublicChoice
from pillar_cli.artifacts.schema import attribute_tables, validate
from pillar_cli.artifacts.stored import stored_keys
from pillar_cli.errors import ArtifactError
from pillar_cli.privacy.basis import ChosenBy
from pillar_cli.privacy.count import NOISY, RowCount
from pillar_cli.privacy.events import GaussianEvent
from pillar_cli.privacy.guarantee import Guarantee
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.unit import PrivacyUnit
from pillar_cli.version import __version__

RELEASE = DPRelease(
    released=Released.PUBLIC_CHOICE,
    mechanism="gaussian",
    epsilon=0.5,
    delta=1e-6,
    event=GaussianEvent(9.0),
    unit=PrivacyUnit(),
)
CHOICE = PublicChoice(
    gsd={"path": "gsd.h5"},
    candidate="other.h5:public",
    gsd_distance=0.25,
    private_input={"path": "emb.h5", "split": "private"},
    release=RELEASE,
    note="chosen by DP-GSD",
)
GUARANTEE = Guarantee(
    unit=PrivacyUnit(), count=RowCount(100.3, NOISY, 20.0, 0.05, (1.0, 1e-5)), accountant="prv", delta=1e-5
)


def _model(guarantee: Guarantee = GUARANTEE, **attrs) -> Artifact:
    return Artifact(
        "model",
        {},
        {
            "num_classes": 3,
            "n_private": 100,
            "selection_note": "one configuration",
            "ledger": {"clip": 1.0},
            "guarantee": guarantee.to_attrs(),
            **attrs,
        },
    )


def test_a_public_choice_round_trips_and_a_model_holds_its_release_in_the_guarantee_at_the_total_delta():
    assert PublicChoice.from_attrs(CHOICE.to_attrs()) == CHOICE
    guarantee = Guarantee(
        unit=PrivacyUnit(), count=GUARANTEE.count, accountant="prv", delta=1e-5, upstream=(RELEASE,)
    )
    header = ModelRecord.of(_model(guarantee, public_choice=CHOICE.to_attrs()))
    assert header.public_choice == CHOICE and header.guarantee == guarantee
    assert header.delta_total == pytest.approx(1e-5 + 1e-6)
    assert header.notes == ["chosen by DP-GSD, at total δ = 1.1e-05", GUARANTEE.count.describe()]


def test_a_choice_without_dp_adds_no_delta_and_says_so_without_one():
    choice = PublicChoice(**{**CHOICE.__dict__, "release": None, "note": "NOT in ε"})
    assert choice.released is False and PublicChoice.from_attrs(choice.to_attrs()) == choice
    header = ModelRecord.of(_model(public_choice=choice.to_attrs()))
    assert header.delta_total == 1e-5 and header.notes == ["NOT in ε", GUARANTEE.count.describe()]


def test_a_record_without_optional_attributes_takes_the_defaults_a_model_means_by_their_absence():
    header = ModelRecord.of(_model())
    assert (header.public_choice, header.trained_on, header.row_l2_normalised, header.accounted) == (
        None,
        ("private",),
        False,
        False,
    )
    assert header.class_names == ["0", "1", "2"] and header.delta_total == 1e-5 and header.count_read_by == ()
    named = ModelRecord.of(_model(features={"class_names": ["a", "b", "c"], "backbone": "resnet50"}))
    assert named.class_names == ["a", "b", "c"] and named.feature_recipe == FeatureRecipe(backbone="resnet50")


def test_the_schema_tables_of_a_model_and_a_classifier_are_their_records_fields():
    required, optional = (table["model"] for table in attribute_tables())
    assert required == {
        "num_classes": int,
        "n_private": int,
        "guarantee": dict,
        "ledger": dict,
        "selection_note": str,
    }
    assert set(optional) | set(required) == stored_keys(ModelRecord)
    assert not {"privacy_unit", "count", "projection_release"} & set(
        optional
    )  # the guarantee holds them, once
    assert attribute_tables()[0]["classifier"] == {
        "class_names": list,
        "head": dict,
        "features": dict,
        "privacy": dict,
    }


def test_a_stored_attribute_of_the_wrong_type_or_a_guarantee_pillar_does_not_read_is_refused():
    model = _model(count_read_by="pillar")
    with pytest.raises(ArtifactError, match=r"^m.h5: model artifact has no valid attribute 'count_read_by'$"):
        validate("model", model.arrays, model.attrs, "m.h5")


def test_a_model_written_before_the_guarantee_was_one_record_is_refused_naming_the_version():
    old = {key: value for key, value in _model().attrs.items() if key != "guarantee"}
    with pytest.raises(
        ArtifactError,
        match=f"^m.h5: model artifact written before a model stored its guarantee as one "
        rf"record \(pillar {__version__} reads only those\)$",
    ):
        validate("model", {}, old | {"privacy_unit": {"unit": "row"}}, "m.h5")


def test_every_field_round_trips_and_unknown_keys_are_a_methods_notes():
    person = Guarantee(
        unit=PrivacyUnit("person", "column id"), count=GUARANTEE.count, accountant="rdp", delta=1e-6
    )
    record = ModelRecord(
        num_classes=3,
        n_private=100,
        selection_note="n",
        guarantee=person,
        ledger=ModelLedger(clip=2.0, protected_split="private", per_run="p"),
        selection=[SelectedCell(method="dpsgd", k=5, epsilon=1.0, run_ids=[0], selected=ChosenBy.VAL)],
        selection_mode="accounted",
        trained_on=("private", "val"),
        shard=(1, 4),
        count_read_by=("dpsgd",),
        row_l2_normalised=True,
        private_fraction=0.5,
        public_choice=CHOICE,
        max_physical_batch=64,
        method_notes={"noisy_sgd": {"beta": 0.05}},
    )
    attrs = record.to_attrs()
    assert attrs["noisy_sgd"] == {"beta": 0.05} and attrs["guarantee"] == person.to_attrs()
    assert ModelRecord.from_attrs(attrs) == record and "source" not in attrs  # None is not written
    assert (record.unit, record.count, record.accountant) == (person.unit, person.count, "rdp")
