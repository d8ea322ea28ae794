"""A folder of DICOM files written by pydicom embeds (one class per sub-folder), trains a private head, releases,
and predicts unlabelled DICOM files through the recorded recipe."""

from __future__ import annotations

import numpy as np
import pytest
from checks import read_predictions

pytest.importorskip("pydicom")
from medical import write_dicom  # noqa: E402

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def test_a_dicom_folder_embeds_trains_releases_and_predicts(pillar, tmp_path):
    rng = np.random.default_rng(0)
    for label, level in (("dark", 600), ("bright", 3400)):
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(60):
            write_dicom(tmp_path / "train" / label / f"{i}.dcm", rng.normal(level, 300, (8, 8)).clip(0, 4095))
    (tmp_path / "new").mkdir()
    for i, level in enumerate((600, 3400, 600)):
        write_dicom(tmp_path / "new" / f"{i}.dcm", np.full((8, 8), level), photometric="MONOCHROME2")
    emb, pca, model, released = (tmp_path / name for name in ("emb.h5", "pca.h5", "m.h5", "rel.h5"))
    pillar("embed", "--source", "dicom", "--path", tmp_path / "train", "--public-fraction", "0.2", "-o", emb)
    pillar("fit-pca", f"{emb}:public", "--k-max", "5", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--eps", "8", "--delta", "1e-3", "-o", model)
    pillar("release", model, "-o", released)
    pillar("predict", released, "--source", "dicom", "--path", tmp_path / "new", "-o", tmp_path / "p.csv")
    _, rows, classes, probabilities = read_predictions(tmp_path / "p.csv")
    assert [row.rsplit("/", 1)[-1] for row in rows] == ["0.dcm", "1.dcm", "2.dcm"]
    assert classes == ["dark", "bright", "dark"] and probabilities.shape == (3, 2)
