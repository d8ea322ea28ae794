"""Neighbours as a data holder makes them: one record deleted from the source and the documented pipeline run
again. Nothing that shapes a release may follow which private rows exist — the class set is declared, each
row's split is its own keyed draw, the recipe is read off public rows — so a rare private label is no
membership test."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
from checks import assert_clean_failure
from PIL import Image
from sklearn.datasets import load_digits

from pillar_cli import artifacts
from pillar_cli.data import SourceOptions, SplitPlan, load_source, make_splits
from pillar_cli.embedding.request import EmbedRequest

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

CLASSES = [str(digit) for digit in range(10)] + ["rare"]


def _digits(path, labels: np.ndarray, declared: bool) -> None:
    x = load_digits().data.astype(np.float32)
    np.savez(path, x=x, y=labels, **({"class_names": np.array(CLASSES)} if declared else {}))


@pytest.fixture(scope="module")
def rare(tmp_path_factory) -> dict:
    """Digits as vectors in an npz, with one private record relabelled to a class nobody else holds: the file
    declaring its 11 classes (rare.npz), and not declaring them (undeclared.npz)."""
    root = tmp_path_factory.mktemp("rare")
    labels = load_digits().target.astype("<U4")
    _digits(root / "rare.npz", labels, declared=True)
    private = make_splits(load_source("npz", SourceOptions(root / "rare.npz")), SplitPlan())["private"]
    labels[private[7]] = "rare"  # a label does not move a row's split: its draw keys on the row's features
    _digits(root / "rare.npz", labels, declared=True)
    _digits(root / "undeclared.npz", labels, declared=False)
    return {"root": root, "row": int(private[7])}


def _features_by_split(path) -> dict[str, set[bytes]]:
    with h5py.File(path, "r") as h5:
        return {name: {row.tobytes() for row in h5[f"splits/{name}/features"][()]} for name in h5["splits"]}


def test_deleting_one_record_from_the_source_keeps_every_other_rows_split(pillar, tmp_path):
    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    np.savez(tmp_path / "all.npz", x=x, y=y, class_names=np.array(CLASSES[:10]))
    pillar("embed", "--source", "npz", "--path", tmp_path / "all.npz", "-o", tmp_path / "all.h5")
    before = _features_by_split(tmp_path / "all.h5")
    for removed in (next(iter(before["private"])), next(iter(before["public"]))):
        gone = int(np.flatnonzero((x == np.frombuffer(removed, np.float32)).all(axis=1))[0])
        np.savez(
            tmp_path / "less.npz",
            x=np.delete(x, gone, axis=0),
            y=np.delete(y, gone),
            class_names=np.array(CLASSES[:10]),
        )
        pillar(
            "embed", "--source", "npz", "--path", tmp_path / "less.npz", "-o", tmp_path / "less.h5", "--force"
        )
        after = _features_by_split(tmp_path / "less.h5")
        assert {name: rows - {removed} for name, rows in before.items()} == after
    pillar("fit-pca", f"{tmp_path / 'all.h5'}:public", "-o", tmp_path / "all-pca.h5")
    np.savez(tmp_path / "less.npz", x=x[1:], y=y[1:], class_names=np.array(CLASSES[:10]))  # row 0: not public
    assert x[0].tobytes() not in before["public"]
    pillar("embed", "--source", "npz", "--path", tmp_path / "less.npz", "-o", tmp_path / "less.h5", "--force")
    pillar("fit-pca", f"{tmp_path / 'less.h5'}:public", "-o", tmp_path / "less-pca.h5")
    fitted = [artifacts.read(tmp_path / name, "projection").arrays for name in ("all-pca.h5", "less-pca.h5")]
    for name in ("mean", "scale", "components"):  # released exactly, as public: the same on both neighbours
        np.testing.assert_array_equal(fitted[0][name], fitted[1][name])


def test_a_rare_private_label_is_no_membership_test_on_the_default_path(pillar, rare, tmp_path):
    emb = tmp_path / "emb.h5"
    pillar("embed", "--source", "npz", "--path", rare["root"] / "rare.npz", "-o", emb)
    result = pillar("audit", "neighbours", emb, "--train", "--eps 1", "--runs", "2", "--json")
    report = json.loads(result.stdout)
    assert report["removed"]["label"] == "rare" and report["removed"]["source_rows"] == [rare["row"]]
    assert report["files"] == [
        "eval.h5",
        "figure.png",
        "pillar-eps1-0-hf",
        "pillar-eps1-0.h5",
        "pillar-eps1-0.html",
        "pillar-eps1-0.onnx",
        "pillar-eps1-0.pt",
        "pillar-eps1-0.safetensors",
        "table.csv",
        "table.md",
    ]  # the evaluation, its tables and figure and the page are published too
    assert report["findings"] == []
    release = tmp_path / "rel.h5"
    pillar("train-private", emb, "-p", _pca(pillar, emb), "--eps", "1", "-o", tmp_path / "m.h5")
    said = pillar("release", tmp_path / "m.h5", "-o", release).stdout
    assert (
        "rests on: the class set, declared by the source, not read from the private labels; the public rows: "
        "each row's split is drawn from its own key" in " ".join(said.split())
    )
    assert artifacts.read(release, "classifier").attrs["class_names"] == CLASSES


def test_classes_read_off_the_labels_are_named_not_covered_and_the_neighbours_check_finds_them(
    pillar, rare, tmp_path
):
    emb = tmp_path / "emb.h5"
    source = ["embed", "--source", "npz", "--path", rare["root"] / "undeclared.npz", "-o", emb]
    assert_clean_failure(
        pillar(*source, expect=None),
        4,
        "source 'undeclared' does not declare its classes, and "
        "classes read from the labels would follow the private rows: a label only they hold would "
        "add a class to every head",
        emb,
    )
    pillar(*source, "--classes-from-labels")
    result = pillar(
        "audit",
        "neighbours",
        emb,
        "--train",
        "--eps 1",
        "--runs",
        "2",
        "--export",
        "safetensors,hf",
        "--json",
        expect=5,
    )
    found = {
        (finding["file"], finding["value"], finding["with_row"], finding["without_row"])
        for finding in json.loads(result.stdout)["findings"]
    }
    assert {
        ("pillar-eps1-0.h5", "attrs/class_names/10", "'rare'", "(absent)"),
        ("pillar-eps1-0.safetensors", "metadata/pillar_class_names/10", "'rare'", "(absent)"),
        ("pillar-eps1-0-hf", "config.json/class_names/10", "'rare'", "(absent)"),
    } <= found
    pillar("train-private", emb, "-p", _pca(pillar, emb), "--eps", "1", "-o", tmp_path / "m.h5")
    said = " ".join(pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5").stdout.split())
    public = len(artifacts.read_split(f"{emb}:public").index)  # the holder's own records, said as such
    assert (
        f"does not cover: {public:,} records of your own source were used without protection as public data: "
        "the projection was fitted on them; the class set, read from the labels of every row "
        "(--classes-from-labels" in said
    )


def test_declared_classes_map_the_labels_and_a_label_outside_them_is_one_line(pillar, rare, tmp_path):
    out = tmp_path / "emb.h5"
    undeclared = ["embed", "--source", "npz", "--path", rare["root"] / "undeclared.npz", "-o", out]
    result = pillar(*undeclared, "--classes", ",".join(CLASSES[:10]), expect=None)
    assert_clean_failure(
        result,
        4,
        "source 'undeclared': label 'rare' is not one of the 10 declared classes (0, 1, "
        "2, 3, 4, 5, … (10 in all))",
        out,
    )
    (tmp_path / "classes.txt").write_text("\n".join(reversed(CLASSES)) + "\n")
    pillar(*undeclared, "--classes", tmp_path / "classes.txt")
    embedded = artifacts.read_split(f"{out}:test")
    assert embedded.class_names == list(reversed(CLASSES)) and embedded.premises.classes == "user"
    digits = load_digits().target
    with h5py.File(out, "r") as h5:
        test_rows = h5["splits/test/index"][()]
    # "9" is class 1 of the reversed list
    np.testing.assert_array_equal(embedded.labels, 10 - digits[test_rows])


def test_image_size_and_bit_depth_are_read_off_a_public_file(pillar, tmp_path):
    """The first file by name, a private record, is 12 × 12 (then 16-bit); every other file is 8-bit and 8 ×
    8. Read off the first file, the recipe would follow whether that record exists."""
    rng = np.random.default_rng(0)
    for label in ("a", "b"):
        (tmp_path / "images" / label).mkdir(parents=True)
        for i in range(30):
            Image.fromarray(rng.integers(0, 255, (8, 8), dtype=np.uint8)).save(
                tmp_path / "images" / label / f"{i}.png"
            )
    odd = None
    for i in range(200):  # a name sorting first whose keyed draw puts it in the private split
        candidate = tmp_path / "images" / "a" / f"!{i:03d}.png"
        Image.fromarray(rng.integers(0, 255, (12, 12), dtype=np.uint8)).save(candidate)
        dataset = load_source(
            "image-folder", SourceOptions(tmp_path / "images", {"channels": "1", "size": "8"})
        )
        if dataset.inputs.files.index(str(candidate)) in make_splits(dataset, SplitPlan())["private"]:
            odd = candidate
            break
        candidate.unlink()
    assert odd is not None
    out = tmp_path / "emb.h5"
    embed = [
        "embed",
        "--source",
        "image-folder",
        "--path",
        tmp_path / "images",
        "--param",
        "channels=1",
        "-o",
        out,
    ]
    result = pillar(*embed, expect=4)  # the public files set the size: the private file is the one refused
    assert result.stderr.startswith(f"error: {odd} is 12 × 12, the other images 8 × 8")
    Image.fromarray(rng.integers(0, 65535, (8, 8), dtype=np.uint16)).save(odd)
    out.with_name("emb.h5.partial").unlink()  # what the refused run kept for --resume
    pillar(*embed)
    recipe = artifacts.read_split(f"{out}:public").recipe
    assert recipe.depth == 8 and recipe.image_shape == (8, 8, 1)


def _pca(pillar, emb) -> str:
    pca = emb.with_name("pca.h5")
    pillar("fit-pca", f"{emb}:public", "-o", pca, "--force")
    return str(pca)


def test_a_flag_the_pipeline_does_not_take_is_one_line_before_anything_is_embedded(
    pillar, tmp_path, monkeypatch
):
    emb = tmp_path / "emb.h5"
    pillar("embed", "--source", "digits", "-o", emb)
    monkeypatch.setattr(EmbedRequest, "dataset", lambda *args: pytest.fail("the source was embedded again"))
    result = pillar(
        "audit", "neighbours", emb, "--train", "--eps 1 --stepz 3", "--workdir", tmp_path / "nb", expect=2
    )
    assert result.stderr.splitlines() == [
        "error: --train: No such option: --stepz (Possible options: --eps, --seed, --steps)",
        "hint: --train takes `pillar train-private`'s options",
    ]
    result = pillar(
        "audit", "neighbours", emb, "--fit-pca", "--k-max many", "--workdir", tmp_path / "nb", expect=2
    )
    assert result.stderr.splitlines()[0].startswith("error: --fit-pca: Invalid value for '--k-max'")
    result = pillar(
        "audit", "neighbours", emb, "--fit-pca", "--noise-seed 3", "--workdir", tmp_path / "nb", expect=2
    )
    assert result.stderr.splitlines() == [
        "error: --fit-pca: each run fits its projection on its own embeddings with "
        "fresh noise, not with --noise-seed"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["emb.h5"]
