"""A model's header: the typed records every stage reads a model's shared attributes through."""

from __future__ import annotations

from pillar_cli.artifacts import Artifact, FeatureRecipe
from pillar_cli.artifacts.model_header import ModelHeader, PublicChoice

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
    header = ModelHeader.of(_model(public_choice=on_model.to_attrs()))
    assert header.public_choice == on_model and header.delta_total == 1e-5 + 1e-6
    assert header.notes == ["chosen by DP-GSD, at total δ = 1.1e-05"]


def test_a_choice_without_dp_adds_no_delta_and_says_so_without_one():
    choice = PublicChoice(**{**CHOICE.to_attrs(), "release": None, "note": "NOT in ε"}).on_model(1e-5)
    assert (choice.released, choice.delta_total, choice.composition) == (False, 1e-5, None)
    assert ModelHeader.of(_model(public_choice=choice.to_attrs())).notes == ["NOT in ε"]


def test_a_header_without_optional_attributes_takes_the_defaults_a_model_means_by_their_absence():
    header = ModelHeader.of(_model())
    assert (header.public_choice, header.trained_on, header.row_l2_normalised, header.accounted) == \
        (None, ("private",), False, False)
    assert header.class_names == ["0", "1", "2"] and header.delta_total == 1e-5 and header.notes == []
    named = ModelHeader.of(_model(features={"class_names": ["a", "b", "c"], "backbone": "resnet50"}))
    assert named.class_names == ["a", "b", "c"] and named.feature_recipe == FeatureRecipe(backbone="resnet50")
