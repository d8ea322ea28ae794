"""Where DP randomness comes from: fresh entropy per generator by default, a labelled derivation only when
seeded."""

from __future__ import annotations

import json

import numpy as np
import torch

from pillar_cli.randomness import NOT_PRIVATE_NOTE, SECRET, NoiseSource, noise_is_reproducible


def test_secret_generators_never_repeat_and_ignore_labels():
    draws = [SECRET.child("dp-sgd", 10, 1.0).numpy().standard_normal(4) for _ in range(2)]
    assert not np.array_equal(*draws)
    first, second = (SECRET.torch().seed() for _ in range(2))
    assert first != second
    assert SECRET.child("anything") is SECRET


def test_a_seeded_source_repeats_each_labelled_stream_and_separates_different_labels():
    source = NoiseSource(7)
    same = [source.child("noise", 0.5).torch() for _ in range(2)]
    assert torch.equal(torch.randn(5, generator=same[0]), torch.randn(5, generator=same[1]))
    other = torch.randn(5, generator=source.child("noise", 0.25).torch())
    assert not torch.equal(torch.randn(5, generator=source.child("noise", 0.5).torch()), other)
    assert np.array_equal(source.child("a").numpy().random(3), NoiseSource(7, ("'a'",)).numpy().random(3))


def test_what_an_artifact_records_holds_no_secret_seed():
    secret = SECRET.describe()
    assert secret["reproducible"] is False and "seed" not in json.dumps(secret).replace("no seed", "")
    assert not noise_is_reproducible({"noise": secret}) and not noise_is_reproducible({})
    seeded = NoiseSource(3).child("x").describe()
    assert seeded == {"source": "seeded", "reproducible": True, "noise_seed": 3, "note": NOT_PRIVATE_NOTE}
    assert noise_is_reproducible({"noise": seeded})
