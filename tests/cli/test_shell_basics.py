"""What a shell user reaches for: a dry run that prints the plan the run will train (and writes nothing), an
error that is one JSON document on stdout under --json, and the ε each cell spent in train-private's JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def digits(pillar, tmp_path_factory):
    root = tmp_path_factory.mktemp("digits")
    pillar("embed", "--source", "digits", "--public-fraction", "0.2", "-o", root / "emb.h5")
    pillar("fit-pca", f"{root / 'emb.h5'}:public", "-o", root / "pca.h5")
    return root


def test_a_dry_run_prints_the_runs_the_run_trains_and_writes_nothing(pillar, digits):
    out = digits / "model.h5"
    argv = [
        "train-private",
        digits / "emb.h5",
        "-p",
        digits / "pca.h5",
        "--eps",
        "0.1,1",
        "--n-public",
        "-o",
        out,
    ]
    planned = json.loads(pillar(*argv, "--dry-run", "--json").stdout)["runs"]
    assert not out.exists()
    trained = json.loads(pillar(*argv, "--json").stdout)
    model = artifacts.read(out, "model")
    assert [(r["method"], r["k"], r["epsilon"], r["steps"], r["batch_size"]) for r in planned] == [
        (c["method"], c["k"], c["epsilon"], c["steps"], c["batch_size"]) for c in trained["selection"]
    ]
    np.testing.assert_allclose([r["lr"] for r in planned], model.array("runs/lr"))
    np.testing.assert_allclose([r["noise_multiplier"] for r in planned], model.array("runs/noise_multiplier"))
    np.testing.assert_allclose([r["sample_rate"] for r in planned], model.array("runs/sample_rate"))
    assert [cell["epsilon_spent"] for cell in trained["selection"]] == list(model.array("runs/epsilon_spent"))
    assert trained["whole_file_epsilon"] == model.attrs["whole_file"]["epsilon"] and math.isfinite(
        trained["whole_file_epsilon"]
    )


def test_an_error_under_json_is_also_one_json_document_on_stdout(pillar, tmp_path):
    missing = tmp_path / "missing.h5"
    result = pillar(
        "train-private", missing, "-p", missing, "--eps", "1", "-o", tmp_path / "m.h5", "--json", expect=3
    )
    assert json.loads(result.stdout) == {
        "error": f"artifact not found: {missing}",
        "hint": None,
        "exit_code": 3,
    }
    assert result.stderr == f"error: artifact not found: {missing}\n"


def test_a_parser_error_under_json_is_one_json_document_too(pillar, tmp_path):
    result = pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", "--json", expect=2)
    assert json.loads(result.stdout) == {
        "error": "Missing option '-o' / '--out'.",
        "hint": "see pillar train-private --help",
        "exit_code": 2,
    }
    assert result.stderr == "error: Missing option '-o' / '--out'.\nhint: see pillar train-private --help\n"
    without = pillar("train-private", tmp_path / "e.h5", "-p", tmp_path / "p.h5", expect=2)
    assert without.stdout == ""


def test_tables_on_an_80_column_terminal_cut_no_number(pillar, digits, monkeypatch):
    """Once `│ p… ││ 1.0 │ 0.9… │`: on a terminal narrower than a table, its rows are printed as lists
    instead."""
    import io

    from rich.console import Console

    from pillar_cli.cli import common

    def on_a_terminal(*argv) -> str:
        screen = io.StringIO()
        monkeypatch.setattr(
            common, "stdout", Console(file=screen, width=80, force_terminal=True, color_system=None)
        )
        pillar(*argv)
        return screen.getvalue()

    model = digits / "m.h5"
    pillar(
        "train-private",
        digits / "emb.h5",
        "-p",
        digits / "pca.h5",
        "--k",
        "5,10",
        "--eps",
        "0.5,1",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "-o",
        model,
        "--force",
    )
    shown = {
        "evaluate": on_a_terminal("evaluate", model, "-e", f"{digits / 'emb.h5'}:test"),
        "dry run": on_a_terminal(
            "train-private",
            digits / "emb.h5",
            "-p",
            digits / "pca.h5",
            "--k",
            "5,10",
            "--eps",
            "0.5,1",
            "--dry-run",
            "-o",
            digits / "x.h5",
        ),
        "backbones": on_a_terminal("embed", "--list-backbones"),
    }
    for name, text in shown.items():
        assert "…" not in text and max(map(len, text.splitlines())) <= 80, name
    rows = json.loads(pillar("evaluate", model, "-e", f"{digits / 'emb.h5'}:test", "--json").stdout)["rows"]
    for row in rows:  # every cell's k and accuracy, whole
        assert f"k: {row['k']}" in shown["evaluate"] and f"{row['accuracy_mean']:.4f}" in shown["evaluate"]
    assert "efficientnet-lite0" in shown["backbones"]


def test_a_closed_or_full_standard_output_is_one_line_and_exit_3(pillar, digits, tmp_path):
    """`predict -o - >&-` was a TypeError, `verify --json > /dev/full` a traceback after its line."""
    import os
    import subprocess
    import sys

    pillar("train-private", digits / "emb.h5", "-p", digits / "pca.h5", "--k", "5", "--steps", "20",
           "-o", tmp_path / "m.h5")  # fmt: skip
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    command = [os.path.join(os.path.dirname(sys.executable), "pillar")]
    closed = subprocess.run(
        [*command, "predict", tmp_path / "rel.h5", f"{digits / 'emb.h5'}:test", "-o", "-"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: os.close(1),
    )
    assert (closed.returncode, closed.stderr) == (
        3,
        "error: standard output is closed: nowhere to write the predictions\n",
    )
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            for json_flag in ([], ["--json"]):
                written = subprocess.run(
                    [*command, "verify", tmp_path / "rel.h5", *json_flag],
                    stdout=full,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                assert (written.returncode, written.stderr) == (3, "error: No space left on device\n")


def test_predictions_piped_into_head_end_quietly_and_files_end_lines_as_standard_output_does(
    pillar, mnist, tmp_path
):
    """`predict -o - | head -1` said "error: Broken pipe" and exited 3; a CSV file had CRLF line ends where
    standard output had LF."""
    import os
    import subprocess
    import sys

    pillar("train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--steps", "20",
           "-o", tmp_path / "m.h5")  # fmt: skip
    pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5")
    command = [os.path.join(os.path.dirname(sys.executable), "pillar"), "predict", tmp_path / "rel.h5"]
    reader = subprocess.Popen(
        [*command, f"{mnist['emb']}:test", "-o", "-"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = reader.stdout.readline()
    reader.stdout.close()  # as head does after its line: ~100 KB of predictions are still to come
    reader.wait(timeout=120)
    errors = [line for line in reader.stderr.read().splitlines() if not line.startswith("warning")]
    assert first.startswith("row,predicted,") and (reader.returncode, errors) == (0, [])
    pillar("predict", tmp_path / "rel.h5", f"{mnist['emb']}:test", "-o", tmp_path / "p.csv")
    written = (tmp_path / "p.csv").read_bytes()
    assert b"\r\n" not in written and written.count(b"\n") == mnist["rows"]["test"] + 1


def test_the_small_print_says_what_it_means(pillar, digits, tmp_path):
    """ "seed 0 (of 0)" for a cell of one repetition; `audit ledger` printed steps_run -1 for a method that
    counts no steps."""
    pillar("train-private", digits / "emb.h5", "-p", digits / "pca.h5", "--method", "dp-ls", "--eps", "1",
           "-o", tmp_path / "m.h5")  # fmt: skip
    released = pillar("release", tmp_path / "m.h5", "-o", tmp_path / "rel.h5").stdout
    assert "seed 0 (its only repetition)" in released
