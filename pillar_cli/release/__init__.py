"""Releases: one private classifier out of a model's working file, with its privacy statement, and its
predictions on new rows.

A model artifact holds every head of a grid, val accuracies and private row ids; a release (the `classifier`
artifact) holds one head, the public scaler and basis it reads through, the class names, the recipe of the
features, and what its ε covers and does not. Applying it needs nothing else (no method registry, no model
file).

Raw inputs are embedded by the release's recorded embedder, rebuilt; an export carries that embedder inside.

May import: `errors`, `artifacts`, `randomness` (whether a model's noise was reproducible), `privacy` (the row
count a statement describes; a claim recomputed from its event), `data` and `embedding` (raw inputs and their
embedder), `methods.estimator` and `finetune.released` (a release loaded as a fitted estimator), `version`
(the program's name on a model card).
"""

from pillar_cli.release.choice import parse_cell, prevalence, release_classifier
from pillar_cli.release.predictions import PREDICTION_FORMATS, write_predictions

__all__ = ["PREDICTION_FORMATS", "parse_cell", "prevalence", "release_classifier", "write_predictions"]
