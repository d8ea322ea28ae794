"""A model's record: the one typed description of a model's shared attributes, which writers build, every stage
reads and the schema's table is made from."""

from __future__ import annotations

import pytest

from pillar_cli.artifacts import Artifact, FeatureRecipe
from pillar_cli.artifacts.chosen import SelectedCell
from pillar_cli.artifacts.model_record import ModelLedger, ModelRecord, PublicChoice
from pillar_cli.artifacts.schema import attribute_tables, validate
from pillar_cli.artifacts.stored import stored_keys
from pillar_cli.errors import ArtifactError
from pillar_cli.privacy.basis import ChosenBy
from pillar_cli.privacy.unit import PrivacyUnit

CHOICE = PublicChoice(gsd={"path": "gsd.h5"}, candidate="other.h5:public", gsd_distance=0.25,
                      private_input={"path": "emb.h5", "split": "private"},
                      release={"mechanism": "gaussian", "epsilon": 0.5, "delta": 1e-6}, note="chosen by DP-GSD")


def _model(**attrs) -> Artifact:
    return Artifact("model", {}, {"num_classes": 3, "n_private": 100, "selection_note": "one configuration",
                                  "ledger": {"accountant": "prv", "delta": 1e-5, "clip": 1.0}, **attrs})


def test_a_public_choice_round_trips_and_a_model_holds_it_at_the_total_delta():
    on_model = CHOICE.on_model(1e-5)
    assert PublicChoice.from_attrs(on_model.to_attrs()) == on_model
    assert on_model.delta_total == 1e-5 + 1e-6 and on_model.composition.startswith("each run's event tree")
    header = ModelRecord.of(_model(public_choice=on_model.to_attrs()))
    assert header.public_choice == on_model and header.delta_total == 1e-5 + 1e-6
    assert header.notes == ["chosen by DP-GSD, at total δ = 1.1e-05"]


def test_a_choice_without_dp_adds_no_delta_and_says_so_without_one():
    choice = PublicChoice(**{**CHOICE.to_attrs(), "release": None, "note": "NOT in ε"}).on_model(1e-5)
    assert (choice.released, choice.delta_total, choice.composition) == (False, 1e-5, None)
    assert ModelRecord.of(_model(public_choice=choice.to_attrs())).notes == ["NOT in ε"]


def test_a_record_without_optional_attributes_takes_the_defaults_a_model_means_by_their_absence():
    header = ModelRecord.of(_model())
    assert (header.public_choice, header.trained_on, header.row_l2_normalised, header.accounted) == \
        (None, ("private",), False, False)
    assert header.class_names == ["0", "1", "2"] and header.delta_total == 1e-5 and header.notes == []
    named = ModelRecord.of(_model(features={"class_names": ["a", "b", "c"], "backbone": "resnet50"}))
    assert named.class_names == ["a", "b", "c"] and named.feature_recipe == FeatureRecipe(backbone="resnet50")


def test_the_schema_tables_of_a_model_and_a_classifier_are_their_records_fields():
    required, optional = (table["model"] for table in attribute_tables())
    assert required == {"num_classes": int, "n_private": int, "ledger": dict, "selection_note": str}
    assert set(optional) | set(required) == stored_keys(ModelRecord) and "privacy_unit" in optional
    assert attribute_tables()[0]["classifier"] == {"class_names": list, "head": dict, "features": dict,
                                                    "privacy": dict}


def test_a_stored_attribute_of_the_wrong_type_is_refused_by_the_table_its_record_made():
    model = Artifact("model", {}, _model(privacy_unit="person").attrs)
    with pytest.raises(ArtifactError, match="^m.h5: model artifact has no valid attribute 'privacy_unit'$"):
        validate("model", model.arrays, model.attrs, "m.h5")


def test_every_field_round_trips_and_unknown_keys_are_a_methods_notes():
    record = ModelRecord(
        num_classes=3, n_private=100, selection_note="n", ledger=ModelLedger(accountant="prv", delta=1e-5, clip=2.0,
                                                                             protected_split="private", per_run="p"),
        selection=[SelectedCell(method="dpsgd", k=5, epsilon=1.0, run_ids=[0], selected=ChosenBy.VAL)],
        selection_mode="accounted", unit=PrivacyUnit("person", "column id"), trained_on=("private", "val"), shard=(1, 4),
        row_l2_normalised=True, private_fraction=0.5, public_choice=CHOICE.on_model(1e-5), max_physical_batch=64,
        method_notes={"noisy_sgd": {"beta": 0.05}})
    attrs = record.to_attrs()
    assert attrs["noisy_sgd"] == {"beta": 0.05} and attrs["privacy_unit"] == PrivacyUnit("person", "column id").to_attrs()
    assert ModelRecord.from_attrs(attrs) == record and "source" not in attrs  # None is not written
