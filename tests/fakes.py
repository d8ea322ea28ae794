"""Small files in the on-disk formats of real datasets, written by tests (no downloads here)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np


def write_pcam(root: Path, train: int, test: int, side: int) -> None:
    """PatchCamelyon's layout: camelyonpatch_level_2_split_{train,test}_{x,y}.h5, labels alternating 0/1."""
    rng = np.random.default_rng(0)
    for part, n in (("train", train), ("test", test)):
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_x.h5", "w") as h5:
            h5["x"] = rng.integers(0, 255, (n, side, side, 3), dtype=np.uint8)
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_y.h5", "w") as h5:
            h5["y"] = (np.arange(n) % 2).reshape(n, 1, 1, 1).astype(np.uint8)
