"""A folder of DICOM files written by pydicom embeds (one class per sub-folder), trains a private head,
releases, and predicts unlabelled DICOM files through the recorded recipe."""

from __future__ import annotations

import numpy as np
import pytest
from checks import read_predictions

pytest.importorskip("pydicom")
from medical import four_encodings, write_dicom

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


def test_an_onnx_export_states_how_stored_dicom_pixels_become_its_input(pillar, tmp_path):
    """12-bit, 16-bit, MONOCHROME1 and rescaled DICOM through the bare path — pydicom, the formula the
    export's metadata states, onnxruntime — give what `pillar predict` gives (12-bit stored values fed as they
    are do not)."""
    import json

    import onnx
    import onnxruntime
    import pydicom

    rng = np.random.default_rng(1)
    for label, level in (("dark", 900), ("bright", 3000)):
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(40):
            write_dicom(tmp_path / "train" / label / f"{i}.dcm", rng.normal(level, 400, (8, 8)).clip(0, 4095))
    new = tmp_path / "new"
    new.mkdir()
    write_dicom(new / "a12.dcm", rng.integers(0, 4096, (8, 8)))
    write_dicom(new / "b16.dcm", rng.integers(0, 65536, (8, 8)), bits=16)
    write_dicom(new / "c-monochrome1.dcm", rng.integers(0, 4096, (8, 8)), photometric="MONOCHROME1")
    write_dicom(new / "d-rescaled.dcm", rng.integers(0, 4096, (8, 8)), slope=-2.0, intercept=1024.0)
    emb, pca, model, released, exported = (
        tmp_path / n for n in ("emb.h5", "pca.h5", "m.h5", "rel.h5", "rel.onnx")
    )
    pillar("embed", "--source", "dicom", "--path", tmp_path / "train", "--public-fraction", "0.2", "-o", emb)
    pillar("fit-pca", f"{emb}:public", "--k-max", "5", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--eps", "8", "--delta", "1e-3", "-o", model)
    pillar("release", model, "-o", released)
    pillar("export", released, "--format", "onnx", "-o", exported)
    pillar("predict", released, "--source", "dicom", "--path", new, "-o", tmp_path / "p.csv")
    _, rows, _, expected = read_predictions(tmp_path / "p.csv")
    metadata = {prop.key: prop.value for prop in onnx.load(str(exported)).metadata_props}
    contract = json.loads(metadata["pillar_input"])
    assert contract["tensor"] == "uint16 (N, 8, 8, 1), channels last, input name 'input'"
    assert all(
        word in contract["dicom"]
        for word in (
            "BitsStored",
            "PixelRepresentation",
            "RescaleSlope",
            "MONOCHROME1",
            "round(level × 65535)",
        )
    )

    def as_the_contract_says(path) -> np.ndarray:
        dataset = pydicom.dcmread(path)
        stored, bits = dataset.pixel_array.astype(np.float64), int(dataset.BitsStored)
        low, high = (
            (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
            if dataset.PixelRepresentation == 1
            else (0, 2**bits - 1)
        )
        level = (
            (stored - low) / (high - low)
            if float(dataset.RescaleSlope) > 0
            else (high - stored) / (high - low)
        )
        level = np.clip(level, 0, 1)
        level = 1 - level if dataset.PhotometricInterpretation == "MONOCHROME1" else level
        return np.rint(level * 65535).astype(np.uint16)[..., None]

    session = onnxruntime.InferenceSession(str(exported), providers=["CPUExecutionProvider"])
    inputs = np.stack([as_the_contract_says(new / row.rsplit("/", 1)[-1]) for row in rows])
    (probabilities,) = session.run(None, {"input": inputs})
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    raw = np.stack([pydicom.dcmread(new / "a12.dcm").pixel_array.astype(np.uint16)[..., None]])
    assert (
        np.abs(session.run(None, {"input": raw})[0] - expected[:1]).max() > 1e-3
    )  # stored values are not levels


def test_scans_that_name_no_patient_are_said_to_be_protected_one_scan_at_a_time(pillar, tmp_path):
    """No PatientID anywhere gave a per-scan guarantee without a word (about 4ε a patient at 4 scans each)."""
    import pydicom

    rng = np.random.default_rng(0)
    for label, level in (("dark", 600), ("bright", 3400)):
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(20):
            path = tmp_path / "train" / label / f"{i}.dcm"
            write_dicom(path, rng.normal(level, 300, (8, 8)).clip(0, 4095))
            dataset = pydicom.dcmread(path)
            del dataset.PatientID
            dataset.save_as(path)
    result = pillar(
        "embed", "--source", "dicom", "--path", tmp_path / "train", "--public-fraction", "0.2",
        "-o", tmp_path / "e.h5",
    )  # fmt: skip
    assert (
        "warning: no DICOM file records a PatientID: each scan is its own privacy unit, so a patient with m "
        "scans is protected at about m·ε; name each scan's patient with --param groups=FILE.csv"
        in result.stderr
    )
    for path in (tmp_path / "train").rglob("*.dcm"):  # the same scans, each naming its patient
        write_dicom(path, pydicom.dcmread(path).pixel_array, patient=f"p{path.stem}")
    named = pillar("embed", "--source", "dicom", "--path", tmp_path / "train", "--public-fraction", "0.2",
                   "-o", tmp_path / "n.h5")  # fmt: skip
    assert "PatientID" not in named.stderr
    assert (
        "warning: 40 of 40 DICOM files record no VOI window: their grey levels span the stored bit range, so "
        "one anatomy stored at another depth or rescale reads otherwise; give every file one window with "
        "--param window=C,W (or a CT preset: brain, soft-tissue, mediastinum, liver, lung, bone)"
        in " ".join(named.stderr.split())
    )


def test_one_slice_stored_four_ways_predicts_alike_by_either_route_through_its_window(pillar, tmp_path):
    """Read over each file's stored bit range, four encodings of one anatomy predicted 1.00 / 1.00 / 0.917 /
    0.500; through the VOI window each records they are one image, by the dicom and the manifest route."""
    rng = np.random.default_rng(2)
    for label, hu in (("fat", -100), ("tissue", 60)):
        (tmp_path / "train" / label).mkdir(parents=True)
        for i in range(40):
            values = rng.normal(hu, 40, (8, 8)).round().clip(-1000, 1000)
            write_dicom(
                tmp_path / "train" / label / f"{i}.dcm", values + 1024, intercept=-1024.0, window=(40, 400)
            )
    slices = [rng.normal(hu, 40, (8, 8)).round().clip(-1000, 1000) for hu in (-100, 60)]
    files = [four_encodings(tmp_path / "new" / f"slice{i}", hu) for i, hu in enumerate(slices)]
    emb, pca, model, released = (tmp_path / name for name in ("emb.h5", "pca.h5", "m.h5", "rel.h5"))
    embedded = pillar("embed", "--source", "dicom", "--path", tmp_path / "train", "--public-fraction", "0.2",
                      "-o", emb)  # fmt: skip
    assert "VOI window" not in embedded.stderr  # every file records one
    pillar("fit-pca", f"{emb}:public", "--k-max", "5", "-o", pca)
    pillar("train-private", emb, "-p", pca, "--eps", "8", "--delta", "1e-3", "-o", model)
    pillar("release", model, "-o", released)
    manifest = tmp_path / "new.csv"
    manifest.write_text("".join(f"{file.relative_to(tmp_path)}\n" for group in files for file in group))
    by_route = []
    for route in (("dicom", tmp_path / "new"), ("manifest", manifest)):
        pillar(
            "predict", released, "--source", route[0], "--path", route[1], "-o", tmp_path / "p.csv", "--force"
        )
        _, rows, classes, probabilities = read_predictions(tmp_path / "p.csv")
        order = np.argsort([row.rsplit("new/", 1)[-1] for row in rows])
        by_route.append(probabilities[order])
        assert [classes[i] for i in order] == ["fat"] * 4 + ["tissue"] * 4
    for probabilities in by_route:
        for group in (probabilities[:4], probabilities[4:]):
            np.testing.assert_allclose(group, group[:1].repeat(4, axis=0), atol=1e-4)
    np.testing.assert_allclose(by_route[0], by_route[1], atol=1e-9)
    refused = pillar("predict", released, "--source", "dicom", "--path", tmp_path / "new", "--param",
                     "window=lung", "-o", tmp_path / "q.csv", expect=2)  # fmt: skip
    assert refused.stderr.splitlines()[0] == (
        "error: --param window=lung: the classifier's rows were read from DICOM through each file's own VOI "
        "window (the stored range where a file records none); new scans must be read so"
    )
