"""Secret randomness: where every draw that a DP guarantee rests on comes from.

Poisson batches, Gaussian and Laplace noise, exponential-mechanism and Bingham samples, the number of trials
of a private selection and its score noise are drawn from generators that `NoiseSource` hands out. By default
each generator is seeded with fresh entropy from the operating system (`secrets`, i.e. os.urandom): 128 bits
for numpy's PCG64, 64 bits for a torch generator (the most its seed takes). The seed lives only in the
generator, is never stored, logged or returned, and two generators never share one, so every mechanism
invocation and every head draws independently of every other.

`NoiseSource(seed=N)` is the experiment-only switch: generators are then derived from N and a label path (the
stream's name, e.g. ("dp-sgd", method, k, ε, run)), so runs are reproducible and a configuration draws the
same noise alone or inside a sweep. Anyone who reads N can regenerate the noise and remove it: outputs made so
are NOT differentially private, and every artifact that holds them says so (`NOT_PRIVATE_NOTE`).

Public randomness that must not depend on which other rows exist — each row's split, whether --fraction keeps
it — is `keyed_draws`: blake2b of each row's own key, keyed by the public seed and what the draw decides, read
as a number in [0, 1). A row's draw is a function of the row alone, so deleting one record moves no other.

May import: nothing.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


def keyed_draws(keys: Iterable[bytes], seed: int, purpose: str) -> np.ndarray:
    """(n,) float64 in [0, 1): blake2b of each key, keyed by the public seed and the purpose."""
    secret = f"pillar|{purpose}|{int(seed)}".encode()[:64]
    values = [
        int.from_bytes(hashlib.blake2b(key, digest_size=8, key=secret).digest(), "little") for key in keys
    ]
    return np.asarray(values, dtype=np.float64) / 2.0**64


SECRET_NOTE = (
    "noise, sampling and private choices drawn from fresh OS entropy per mechanism and per head; no seed "
    "of them is stored"
)
NOT_PRIVATE_NOTE = "noise reproducible from the recorded seed: NOT differentially private"


@dataclass(frozen=True)
class NoiseSource:
    """Hands out generators for secret randomness: fresh OS entropy each (seed None), or, for experiments
    only, generators derived from `seed` and the label path built with `child`."""

    seed: int | None = None
    path: tuple[str, ...] = ()

    @property
    def reproducible(self) -> bool:
        return self.seed is not None

    def child(self, *labels: object) -> NoiseSource:
        """The source of one named stream below this one; secret sources ignore labels (every draw is
        fresh)."""
        if self.seed is None:
            return self
        return NoiseSource(self.seed, self.path + tuple(repr(label) for label in labels))

    def numpy(self) -> np.random.Generator:
        """A numpy generator for one mechanism invocation."""
        return np.random.default_rng(self._entropy(128))

    def torch(self, device: object = "cpu"):
        """A torch generator on `device` for one mechanism invocation (or one head's noise stream)."""
        import torch

        return torch.Generator(device=device).manual_seed(self._entropy(64))

    def describe(self) -> dict:
        """What an artifact records of the source: never a secret seed, only whether noise is reproducible."""
        if self.seed is None:
            return {"source": "os-entropy", "reproducible": False, "note": SECRET_NOTE}
        return {"source": "seeded", "reproducible": True, "noise_seed": self.seed, "note": NOT_PRIVATE_NOTE}

    def _entropy(self, bits: int) -> int:
        if self.seed is None:
            return secrets.randbits(bits)
        digest = hashlib.sha256(repr((self.seed, *self.path)).encode()).digest()
        return int.from_bytes(digest[: bits // 8], "little")


SECRET = NoiseSource()


def noise_is_reproducible(attrs: dict) -> bool:
    """Whether an artifact's attrs say its noise came from a recorded seed (absent: the DP default)."""
    return bool((attrs.get("noise") or {}).get("reproducible", False))
