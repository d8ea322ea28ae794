"""Reading a classifier file: checked as every artifact is (kind, hashes, schema), then read as its record."""

from __future__ import annotations

from pillar_cli.artifacts.classifier import Classifier, classifier_of
from pillar_cli.artifacts.core import read


def read_classifier(path: str) -> Classifier:
    """A classifier artifact, refused with one line when it is another kind or damaged."""
    return classifier_of(read(path, "classifier"))
