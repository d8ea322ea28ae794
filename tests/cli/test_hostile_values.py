"""Values users really type or hold, each of which once ended in a traceback, a crash or a silently wrong
result: labels of any kind, numbers beyond 64 bits, names beyond 255 bytes, a full disk, several outputs of
one command, a model given twice, a misspelt option or config key. Each gets one line, its exit code, and
leaves nothing."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from checks import assert_clean_failure, edited_copy
from sklearn.datasets import load_digits

from pillar_cli.artifacts import files
from pillar_cli.errors import ArtifactError

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def model(pillar, mnist, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("model") / "m.h5"
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--steps",
        "5",
        "--lr",
        "0.1",
        "-o",
        out,
    )
    return out


def test_labels_keep_their_names_and_train(pillar, tmp_path):
    """String labels, {-1, 1} and {7, 1000} (once a traceback, a crash in train-private and 1,001 classes)."""
    digits = load_digits()
    for name, labels, names in (
        ("str", np.array(["cat", "dog"])[digits.target % 2], ["cat", "dog"]),
        ("pm1", np.where(digits.target < 5, -1, 1), ["-1", "+1"]),
        ("far", np.where(digits.target < 5, 7, 1000), ["7", "1000"]),
    ):
        np.savez(tmp_path / f"{name}.npz", x=digits.data.astype(np.float32), y=labels)
        emb, pca = tmp_path / f"{name}.h5", tmp_path / f"{name}-pca.h5"
        pillar(
            "embed", "--source", "npz", "--path", tmp_path / f"{name}.npz", "--classes-from-labels", "-o", emb
        )
        with h5py.File(emb, "r") as h5:
            assert json.loads(h5.attrs["class_names"]) == names
        pillar("fit-pca", f"{emb}:public", "--k-max", "10", "-o", pca)
        pillar("train-private", emb, "-p", pca, "--k", "5", "--steps", "5", "-o", tmp_path / f"{name}-m.h5")
        with h5py.File(tmp_path / f"{name}-m.h5", "r") as h5:
            assert int(h5.attrs["num_classes"]) == 2


def test_labels_that_name_no_class_are_refused_at_embed(pillar, tmp_path):
    np.savez(tmp_path / "half.npz", x=np.zeros((40, 3), np.float32), y=np.tile([0.5, 1.5], 20))
    out = tmp_path / "emb.h5"
    result = pillar("embed", "--source", "npz", "--path", tmp_path / "half.npz", "-o", out, expect=None)
    assert_clean_failure(
        result, 4, f"labels of {tmp_path / 'half.npz'} must be integers or strings: row 0 holds 0.5", out
    )


def test_labels_outside_the_class_names_are_refused(pillar, mnist, tmp_path):
    forged, out = tmp_path / "emb.h5", tmp_path / "m.h5"
    with edited_copy(mnist["emb"], forged) as h5:  # restamped: as a buggy writer would leave it
        labels = h5["splits/private/labels"][()]
        labels[:3] = -1
        h5["splits/private/labels"][...] = labels
    result = pillar(
        "train-private", forged, "-p", mnist["pca"], "--k", "5", "--steps", "5", "-o", out, expect=None
    )
    assert_clean_failure(result, 3, f"{forged}:private has labels outside 0..9 (its 10 class names)", out)


@pytest.mark.parametrize(
    "flag, value, message",
    [
        ("--seed", str(2**64), f"--seed values must be below 2**63; got {2**64}"),
        ("--steps", "9" * 20, f"--steps values must be below 2**63; got {'9' * 20}"),
        ("--batch-size", str(2**63), f"--batch-size values must be below 2**63; got {2**63}"),
    ],
)
def test_integers_beyond_64_bits_are_refused(pillar, mnist, tmp_path, flag, value, message):
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", flag, value, "-o", out, expect=None
    )
    assert_clean_failure(result, 2, message, out)


def test_a_typed_integer_option_beyond_64_bits_is_refused(pillar, mnist, tmp_path):
    out = tmp_path / "a.h5"
    result = pillar(
        "check-assumptions",
        f"{mnist['emb']}:val",
        "-p",
        mnist["pca"],
        "--seed",
        str(2**64),
        "-o",
        out,
        expect=None,
    )
    assert_clean_failure(result, 2, f"--seed must be below 2**63 (got {2**64})", out)


def test_steps_no_accountant_can_handle_are_one_line(pillar, mnist, tmp_path):
    out = tmp_path / "m.h5"
    result = pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "5",
        "--steps",
        str(10**18),
        "-o",
        out,
        expect=None,
    )
    assert result.exit_code == 5 and not out.exists() and "Traceback" not in result.stderr
    assert result.stderr.startswith(
        "error: the prv accountant cannot account for 1,000,000,000,000,000,000 steps"
    )


def test_file_names_beyond_255_bytes(pillar, mnist, tmp_path):
    """A long but valid output name is written (its temporary name is cut to fit); a name no file system takes
    is one line, as output and as input."""
    near_limit = tmp_path / ("a" * 250 + ".h5")
    pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "5", "-o", near_limit)
    assert sorted(p.name for p in tmp_path.iterdir()) == [near_limit.name]
    too_long = tmp_path / ("b" * 300 + ".h5")
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "5", "-o", too_long, expect=None)
    assert_clean_failure(result, 2, f"output name {'b' * 40}… is 303 bytes long; file names hold at most 255")
    result = pillar("inspect", too_long, expect=None)
    assert_clean_failure(result, 3, f"{too_long}: File name too long")


def test_a_full_disk_is_refused_before_writing(pillar, mnist, tmp_path, monkeypatch):
    """libhdf5 cannot recover from a write that fails for want of space (the interpreter then crashed at
    exit): the room a write needs is checked before it starts."""
    monkeypatch.setattr(
        files.shutil, "disk_usage", lambda path: shutil._ntuple_diskusage(2**30, 2**30 - 2**20, 2**20)
    )
    for command, what in (
        (["fit-pca", f"{mnist['emb']}:public", "--k-max", "50"], f"writing {tmp_path / 'o.h5'}"),
        (["embed", "--source", "digits"], "embed"),
    ):
        result = pillar(*command, "-o", tmp_path / "o.h5", expect=None)
        assert result.exit_code == 3 and "Traceback" not in result.stderr
        needed = re.fullmatch(
            f"error: {re.escape(what)} needs about ([0-9.]+) MiB in {re.escape(str(tmp_path))}; "
            r"1\.0 MiB free there",
            result.stderr.splitlines()[0],
        )
        assert needed and float(needed.group(1)) > 1.0
        assert list(tmp_path.iterdir()) == []  # no scratch file either


@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("mount"), reason="mounts a small tmpfs (needs root)"
)
def test_a_full_tmpfs(mnist, tmp_path):
    """The same on a real 2 MiB file system, through the installed command (a crash would show as rc 139)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk], capture_output=True
    ).returncode:
        pytest.skip("tmpfs cannot be mounted here")
    try:
        (disk / "fill").write_bytes(b"\0" * 1_900_000)
        for command in (
            ["embed", "--source", "mnist5k", "-o", "e.h5"],
            ["train-private", mnist["emb"], "-p", mnist["pca"], "--k", "5", "--steps", "5", "-o", "m.h5"],
        ):
            done = subprocess.run(
                [sys.executable, "-m", "pillar_cli", *map(str, command)],
                cwd=disk,
                capture_output=True,
                text=True,
            )
            assert done.returncode == 3, done.stderr
            assert done.stderr.startswith("error: ") and "free there" in done.stderr.splitlines()[0]
            assert sorted(p.name for p in disk.iterdir()) == ["fill"]
    finally:
        subprocess.run(["umount", disk], check=True)


def test_a_disk_filling_up_under_a_safetensors_or_hf_export_is_one_line(pillar, model, tmp_path, monkeypatch):
    """safetensors reports a full disk as its own error kind (it was a traceback, the hf folder half
    written)."""
    import safetensors.torch
    from safetensors import SafetensorError

    def full(*args, **kwargs):
        raise SafetensorError(
            'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on '
            'device" })'
        )

    pillar("release", model, "-o", tmp_path / "rel.h5")
    monkeypatch.setattr(safetensors.torch, "save_file", full)
    for fmt, out in (("safetensors", tmp_path / "w.safetensors"), ("hf", tmp_path / "hf")):
        result = pillar("export", tmp_path / "rel.h5", "--format", fmt, "-o", out, expect=None)
        assert_clean_failure(result, 3, "No space left on device", out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rel.h5"]


def test_two_outputs_of_one_command_cannot_be_one_file(pillar, mnist, model, tmp_path):
    same = tmp_path / "same.h5"
    result = pillar("evaluate", model, "-e", mnist["emb"], "-o", same, "--csv", same, expect=None)
    assert_clean_failure(result, 2, f"output {same} is named twice: each output needs its own file", same)


def test_outputs_are_written_together_or_not_at_all(pillar, mnist, model, tmp_path, monkeypatch):
    """The artifact fails last: the CSV and the figure written before it must not stay behind."""

    def no_room(*args, **kwargs):
        raise ArtifactError(f"cannot write {tmp_path / 'e.h5'}: no space left on device")

    monkeypatch.setattr(importlib.import_module("pillar_cli.cli.evaluate"), "save", no_room)
    result = pillar(
        "evaluate",
        model,
        "-e",
        mnist["emb"],
        "--csv",
        tmp_path / "a.csv",
        "--plot",
        tmp_path / "a.png",
        "-o",
        tmp_path / "e.h5",
        expect=None,
    )
    assert_clean_failure(result, 3, f"cannot write {tmp_path / 'e.h5'}: no space left on device")
    assert list(tmp_path.iterdir()) == []


def test_a_dangling_link_as_output_needs_force(pillar, mnist, tmp_path):
    link = tmp_path / "p.h5"
    link.symlink_to(tmp_path / "nowhere.h5")
    result = pillar("fit-pca", f"{mnist['emb']}:public", "--k-max", "5", "-o", link, expect=None)
    assert_clean_failure(result, 2, f"output {link} exists; pass --force to replace it")
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "nowhere.h5")


def test_a_model_given_twice_is_not_two_seeds(pillar, mnist, model, tmp_path):
    copy = tmp_path / "copy.h5"
    copy.write_bytes(model.read_bytes())
    run = "pillar k=5 ε=1 lr=0.1 steps=5 batch=512 seed=0"
    for second, message in (
        (model, f"{model} is given twice"),
        (copy, f"{copy} and {model} both hold the run {run}"),
    ):
        result = pillar("evaluate", model, second, "-e", mnist["emb"], expect=None)
        assert_clean_failure(
            result,
            3,
            message
            + (
                ": the shards of one sweep hold each run once"
                if second == copy
                else f" (its run {run} would count twice)"
            ),
        )


def test_usage_errors_are_one_line(pillar, mnist, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("epss: 5\n")
    out = tmp_path / "m.h5"
    base = ["train-private", mnist["emb"], "-p", mnist["pca"], "-o", out]
    for extra, message in (
        (
            ["--config", config],
            f"Invalid value for '--config': {config} sets 'epss', which is not an option of "
            "this command (did you mean 'eps'?)",
        ),
        (["--stepz", "5"], "No such option: --stepz (Possible options: --eps, --seed, --steps)"),
    ):
        result = pillar(*base, *extra, expect=None)
        assert_clean_failure(result, 2, message, out)
        assert result.stderr.splitlines()[1] == "hint: see pillar train-private --help"
    result = pillar("train-private", mnist["emb"], expect=None)
    assert_clean_failure(result, 2, "Missing option '--projection' / '-p'.")
