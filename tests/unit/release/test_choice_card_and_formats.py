"""What a release is named by and written as: the cell a user names, the prediction formats, where a
signature lies, and the card's text for names from the user's data."""

from __future__ import annotations

from pathlib import Path

import pytest

from pillar_cli.errors import UsageError
from pillar_cli.release.card import _text, front_matter_of
from pillar_cli.release.choice import parse_cell
from pillar_cli.release.predictions import STDOUT, prediction_format
from pillar_cli.release.signing import signature_path


def test_a_cell_is_named_by_any_of_method_k_and_eps():
    assert parse_cell("method=pillar, k=20 ,eps=1") == {"method": "pillar", "k": "20", "eps": 1.0}
    assert parse_cell(None) == parse_cell("") == {}
    assert parse_cell("eps=inf") == {"eps": float("inf")}
    with pytest.raises(UsageError, match=r"^cell takes method=NAME,k=K,eps=E \(any of them\); got 'lr=1'$"):
        parse_cell("lr=1")
    with pytest.raises(UsageError, match=r"^cell: 'one' is not a number for eps$"):
        parse_cell("eps=one")


def test_prediction_formats_are_named_by_their_suffix(tmp_path):
    assert prediction_format(STDOUT) == ".csv" and prediction_format(tmp_path / "p.JSONL") == ".jsonl"
    with pytest.raises(UsageError, match=r"^cannot write predictions as '\.txt': name the output \*\.csv"):
        prediction_format(tmp_path / "p.txt")


def test_a_signature_lies_beside_a_file_and_inside_a_folder(tmp_path):
    assert signature_path(tmp_path / "rel.h5") == tmp_path / "rel.h5.sig"
    assert signature_path(tmp_path / "hf", folder=True) == tmp_path / "hf" / "model.sig"
    (tmp_path / "made").mkdir()
    assert signature_path(tmp_path / "made") == tmp_path / "made" / "model.sig"
    assert signature_path(Path("relative.onnx")) == Path("relative.onnx.sig")


def test_the_users_names_are_card_text_and_front_matter_reads_back():
    assert _text("<script>alert(1)</script> & `code`") == "&lt;script&gt;alert(1)&lt;/script&gt; & 'code'"
    assert _text("benign") == "benign"
    assert front_matter_of("---\nlibrary_name: pillar\ntags: [a, b]\n---\n# body\n") == {
        "library_name": "pillar",
        "tags": ["a", "b"],
    }
    assert front_matter_of("# no front matter\n") is None
