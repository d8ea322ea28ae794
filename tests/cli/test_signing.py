"""A release you can hand over: signed with the OpenSSF model-signing library (`--sign KEY`), checked by
`pillar verify --key PUBLIC` — signature, hashes and statement, ε recomputed by dp-accounting — one line per
check. A byte flipped fails; an ε edited and the file re-hashed with pillar's own functions passes the hashes
and fails the signature."""

from __future__ import annotations

import json
import signal

import pytest
from checks import assert_clean_failure, edited_copy, snapshot

from pillar_cli import artifacts
from pillar_cli.artifacts.statement import statement_summary

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    root = tmp_path_factory.mktemp("keys")
    key = ec.generate_private_key(ec.SECP256R1())
    (root / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    (root / "pub.pem").write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    other = ec.generate_private_key(ec.SECP256R1()).public_key()
    (root / "other.pem").write_bytes(
        other.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return root


@pytest.fixture(scope="module")
def signed(mnist, pillar, keys, tmp_path_factory):
    root = tmp_path_factory.mktemp("signed")
    pillar(
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--eps",
        "1",
        "--k",
        "10",
        "--lr",
        "0.5",
        "--steps",
        "20",
        "-o",
        root / "m.h5",
    )
    pillar("release", root / "m.h5", "-o", root / "rel.h5", "--sign", keys / "key.pem")
    pillar("export", root / "rel.h5", "--format", "onnx", "-o", root / "rel.onnx", "--sign", keys / "key.pem")
    return root


def statuses(result) -> dict[str, str]:
    return {check["name"]: check["status"] for check in json.loads(result.stdout)["checks"]}


@pytest.mark.parametrize("name", ["rel.h5", "rel.onnx"])
def test_a_signed_release_and_export_verify(pillar, signed, keys, name):
    assert (signed / f"{name}.sig").exists()
    result = pillar("verify", signed / name, "--key", keys / "pub.pem")
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok    signature",
        "ok    hashes and statement",
        "ok    epsilon",
        "ok    risk",
    ]
    assert "dp-accounting PLD gives ε = " in lines[2]
    # a signature beside it that no key checks
    unchecked = pillar("verify", signed / name, "--json", expect=3)
    assert statuses(unchecked) == {
        "signature": "FAIL",
        "hashes and statement": "ok",
        "epsilon": "ok",
        "risk": "ok",
    }
    assert "but not checked: pass --key" in json.loads(unchecked.stdout)["checks"][0]["detail"]


def test_another_key_a_flipped_byte_and_a_rehashed_edit_fail(pillar, signed, keys, tmp_path):
    wrong_key = pillar("verify", signed / "rel.h5", "--key", keys / "other.pem", "--json", expect=3)
    assert statuses(wrong_key)["signature"] == "FAIL"
    flipped = tmp_path / "flipped.h5"
    data = bytearray((signed / "rel.h5").read_bytes())
    data[len(data) // 2] ^= 0xFF
    flipped.write_bytes(bytes(data))
    (tmp_path / "flipped.h5.sig").write_bytes((signed / "rel.h5.sig").read_bytes())
    assert (
        statuses(pillar("verify", flipped, "--key", keys / "pub.pem", "--json", expect=3))["signature"]
        == "FAIL"
    )
    forged = tmp_path / "forged.h5"
    with edited_copy(
        signed / "rel.h5", forged
    ) as h5:  # a larger ε claims less privacy: every reader accepts it
        statement = json.loads(h5.attrs["privacy"])
        statement["epsilon"] = 2.0
        statement["summary"] = statement_summary(statement)
        h5.attrs["privacy"] = json.dumps(statement)
    (tmp_path / "forged.h5.sig").write_bytes((signed / "rel.h5.sig").read_bytes())
    result = pillar("verify", forged, "--key", keys / "pub.pem", "--json", expect=3)
    assert statuses(result) == {
        "signature": "FAIL",
        "hashes and statement": "ok",
        "epsilon": "ok",
        "risk": "ok",
    }
    assert result.stderr.startswith(f"error: {forged} failed 1 of 4 checks: signature")


def test_a_key_that_cannot_sign_is_refused_before_anything_is_written(pillar, signed, keys, tmp_path):
    out = tmp_path / "rel.h5"
    result = pillar("release", signed / "m.h5", "-o", out, "--sign", keys / "pub.pem", expect=2)
    assert_clean_failure(result, 2, f"{keys / 'pub.pem'} is not an unencrypted PEM private key", out)
    assert not (tmp_path / "rel.h5.sig").exists()
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    for curve in (
        ec.SECP256K1(),
        ec.BrainpoolP256R1(),
    ):  # EC keys model-signing cannot sign with: once a crash
        key = tmp_path / f"{curve.name}.pem"  # after the release was written, leaving it without its .sig
        key.write_bytes(
            ec.generate_private_key(curve).private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        result = pillar("release", signed / "m.h5", "-o", out, "--sign", key, expect=2)
        assert_clean_failure(
            result,
            2,
            f"{key} is a key on the curve {curve.name}; model-signing signs with "
            "secp256r1, secp384r1, secp521r1 keys only",
            out,
        )
        assert not (tmp_path / "rel.h5.sig").exists()


def test_a_hugging_face_folder_carries_a_model_card_that_states_the_guarantee(
    mnist, pillar, signed, keys, tmp_path
):
    from huggingface_hub import ModelCard

    evaluation, folder = tmp_path / "eval.h5", tmp_path / "classifier-hf"
    pillar("evaluate", signed / "m.h5", "-e", f"{mnist['emb']}:test", "-o", evaluation)
    pillar(
        "export",
        signed / "rel.h5",
        "--format",
        "hf",
        "--evaluation",
        evaluation,
        "-o",
        folder,
        "--sign",
        keys / "key.pem",
    )
    assert sorted(p.name for p in folder.iterdir()) == [
        "README.md",
        "config.json",
        "model.safetensors",
        "model.sig",
    ]
    assert not (tmp_path / "classifier-hf.sig").exists()  # inside, so that an upload of the folder keeps it
    statement = json.loads((folder / "config.json").read_text())["privacy"]
    card = ModelCard.load(folder / "README.md").data.to_dict()  # offline: a local file
    stated = card["differential_privacy"]
    assert (stated["epsilon"], stated["delta"], stated["accountant"]) == (
        statement["epsilon"],
        statement["delta"],
        statement["accountant"],
    )
    assert stated["covers"] == statement["covers"] and stated["not_covered"] == statement["not_covered"]
    assert stated["unit"] == "one training row (its features and label)" and card["library_name"] == "pillar"
    assert stated["risk"] == statement["risk"] and 0 < stated["risk"]["tpr_at_fpr"]["0.01"] < 1
    assert "## What ε means for one training row" in (folder / "README.md").read_text()
    row = artifacts.read(evaluation, "evaluation").attrs["rows"][0]
    # the Hub's model-index, parsed by its library
    results = ModelCard.load(folder / "README.md").data.eval_results
    accuracy = next(result for result in results if result.metric_type == "accuracy")
    assert accuracy.metric_value == pytest.approx(row["accuracy_mean"]) and accuracy.dataset_split == "test"
    assert accuracy.task_type == card["pipeline_tag"] == "image-classification" and card["license"] == "other"
    assert statuses(pillar("verify", folder, "--key", keys / "pub.pem", "--json")) == {
        "signature": "ok",
        "hashes and statement": "ok",
        "epsilon": "ok",
        "risk": "ok",
    }
    (folder / "README.md").write_text((folder / "README.md").read_text().replace("epsilon: ", "epsilon: 0.0"))
    assert (
        statuses(pillar("verify", folder, "--key", keys / "pub.pem", "--json", expect=3))["signature"]
        == "FAIL"
    )


def test_an_unsigned_export_checks_its_weights_and_card_and_says_it_is_unsigned(pillar, signed, tmp_path):
    from onnx import load, numpy_helper, save

    for fmt, name in (("onnx", "x.onnx"), ("safetensors", "x.safetensors"), ("hf", "x-hf")):
        pillar("export", signed / "rel.h5", "--format", fmt, "-o", tmp_path / name)
        result = pillar("verify", tmp_path / name, "--json")
        assert statuses(result) == {
            "signature": "skip",
            "hashes and statement": "ok",
            "epsilon": "ok",
            "risk": "ok",
        }
        assert json.loads(result.stdout)["checks"][0]["detail"].startswith(
            "not signed: nothing proves who wrote"
        )
    model = load(str(tmp_path / "x.onnx"))
    weight = max(model.graph.initializer, key=lambda tensor: numpy_helper.to_array(tensor).size)
    values = numpy_helper.to_array(weight).copy()
    values.flat[0] += 1e-3
    weight.CopyFrom(numpy_helper.from_array(values, weight.name))
    save(model, str(tmp_path / "y.onnx"))
    data = bytearray((tmp_path / "x.safetensors").read_bytes())
    data[-3] ^= 0x01  # a byte of the last tensor
    (tmp_path / "y.safetensors").write_bytes(bytes(data))
    card = tmp_path / "x-hf" / "README.md"
    card.write_text(card.read_text().replace("  epsilon: ", "  epsilon: 0.01 # ", 1))
    for name, part in (("y.onnx", "graph"), ("y.safetensors", "tensors"), ("x-hf", "README.md")):
        result = pillar("verify", tmp_path / name, "--json", expect=3)
        assert statuses(result) == {
            "signature": "skip",
            "hashes and statement": "FAIL",
            "epsilon": "skip",
            "risk": "skip",
        }
        assert f"its {part} changed after it was exported" in json.loads(result.stdout)["checks"][1]["detail"]


def test_predict_says_whether_its_release_is_signed_and_verified(pillar, signed, keys, mnist, tmp_path):
    unsigned = tmp_path / "unsigned.h5"
    unsigned.write_bytes((signed / "rel.h5").read_bytes())
    rows = f"{mnist['emb']}:test"
    said = {
        name: pillar("predict", path, rows, "-o", tmp_path / f"{name}.csv", *extra)
        .stderr.strip()
        .splitlines()[-1]
        for name, path, extra in (
            ("unsigned", unsigned, ()),
            ("unchecked", signed / "rel.h5", ()),
            ("checked", signed / "rel.h5", ("--key", keys / "pub.pem")),
        )
    }
    assert said == {
        "unsigned": f"{unsigned}: not signed: nothing proves who wrote it (its hashes and ε are checked, but "
        "anyone who edits it can recompute them)",
        "unchecked": f"{signed / 'rel.h5'}: signed ({signed / 'rel.h5.sig'}) but not verified: pass --key "
        "with the signer's public key to know who wrote it",
        "checked": f"{signed / 'rel.h5'}: signed and verified ({signed / 'rel.h5.sig'} holds for "
        f"{keys / 'pub.pem'})",
    }
    result = pillar(
        "predict", signed / "rel.h5", rows, "-o", tmp_path / "x.csv", "--key", keys / "other.pem", expect=3
    )
    assert result.stderr.startswith(
        f"error: {signed / 'rel.h5'}: the signature {signed / 'rel.h5.sig'} does not "
        f"hold for {keys / 'other.pem'}"
    )
    assert not (tmp_path / "x.csv").exists()
    command = artifacts.read(signed / "rel.h5", "classifier").provenance.command
    assert (
        "--sign" not in command and str(keys / "key.pem") not in command
    )  # no key's path in a recorded command


@pytest.mark.parametrize("command", ["release", "export"])
def test_a_signal_while_signing_leaves_neither_file_and_restores_what_force_replaced(
    pillar, signed, keys, tmp_path, monkeypatch, command
):
    """Ctrl-C or SIGTERM after the file is written but before its signature is: no unsigned output stays
    behind the "interrupted" line, and the output --force was replacing, with its signature, is back as it
    was."""
    import pillar_cli.cli.export
    import pillar_cli.cli.release

    def interrupted_while_signing(path, key):
        (path.parent / f"{path.name}.sig").write_text("half a signature")
        raise KeyboardInterrupt

    argv = {
        "release": ["release", signed / "m.h5"],
        "export": ["export", signed / "rel.h5", "--format", "onnx"],
    }
    out = tmp_path / ("new.h5" if command == "release" else "new.onnx")
    monkeypatch.setattr(getattr(pillar_cli.cli, command), "sign_file", interrupted_while_signing)
    result = pillar(*argv[command], "-o", out, "--sign", keys / "key.pem", expect=130)
    assert result.stderr.strip().splitlines()[-1] == (
        "error: interrupted; no artifact was written (existing files are unchanged)"
    )
    assert list(tmp_path.iterdir()) == []
    out.write_bytes(b"previous output")
    (tmp_path / f"{out.name}.sig").write_bytes(b"previous signature")
    pillar(*argv[command], "-o", out, "--sign", keys / "key.pem", "--force", expect=130)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([out.name, f"{out.name}.sig"])
    assert out.read_bytes() == b"previous output"
    assert (tmp_path / f"{out.name}.sig").read_bytes() == b"previous signature"


def test_a_signed_hf_folder_verifies_by_a_relative_path_from_elsewhere_and_after_a_move(
    pillar, signed, keys, tmp_path, monkeypatch
):
    """Signed with a relative -o, the folder once failed its own signature (its signature was left out of what
    it covers by the path as given, which the verifier reads relative to the folder): it verifies by a
    relative and an absolute path, from another working directory, and after the folder is moved."""
    monkeypatch.chdir(tmp_path)
    pillar("export", signed / "rel.h5", "--format", "hf", "-o", "hfv", "--sign", keys / "key.pem")
    assert "ok    signature" in pillar("verify", "hfv", "--key", keys / "pub.pem").stdout
    assert "ok    signature" in pillar("verify", tmp_path / "hfv", "--key", keys / "pub.pem").stdout
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert "ok    signature" in pillar("verify", "../hfv", "--key", keys / "pub.pem").stdout
    (tmp_path / "hfv").rename(tmp_path / "moved")
    assert "ok    signature" in pillar("verify", "../moved", "--key", keys / "pub.pem").stdout
    (tmp_path / "moved" / "README.md").write_text("an edited card\n")
    result = pillar("verify", "../moved", "--key", keys / "pub.pem", expect=3)
    assert "FAIL  signature" in result.stdout


WRITERS = {  # each writer's command line after `pillar`, and the outputs it leaves when it finishes
    "release": (["release", "m.h5", "--sign"], ["out.h5", "out.h5.sig"]),
    "onnx": (["export", "rel.h5", "--format", "onnx", "--sign"], ["out.onnx", "out.onnx.sig"]),
    "hf": (["export", "rel.h5", "--format", "hf", "--sign"], ["out"]),
    "page": (["page", "rel.h5"], ["out.html"]),
}


@pytest.mark.parametrize("point", [1, 2, "printing"])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_sigterm_at_any_point_of_a_writer_leaves_nothing_and_restores_what_force_replaced(
    pillar, signed, keys, tmp_path, monkeypatch, writer, point
):
    """SIGTERM (the handler main() installs) after the first output is in place, after the second (the
    signature), or while the command prints its summary: exit 130 and no output, no signature; with --force,
    the previous outputs are back as they were. Once the page, a signed release and a signed ONNX export
    stayed behind an "interrupted" line."""
    import pillar_cli.artifacts.files
    import pillar_cli.artifacts.outputs
    import pillar_cli.release.folder
    import pillar_cli.release.signing
    from pillar_cli.cli import common
    from pillar_cli.cli.boundary import interrupt

    words, outputs = WRITERS[writer]
    if point == 2 and "--sign" not in words:
        pytest.skip("one output: no second point")
    placed = {"count": 0}
    real = pillar_cli.artifacts.outputs.put_in_place

    def placing_then_signalled(made, path):
        real(made, path)
        placed["count"] += 1
        if placed["count"] == point:
            interrupt(signal.SIGTERM, None)

    def signalled() -> None:
        placed["count"] = 0
        for module in (pillar_cli.artifacts.files, pillar_cli.release.folder, pillar_cli.release.signing):
            monkeypatch.setattr(module, "put_in_place", placing_then_signalled)
        if point == "printing":
            for name in ("stdout", "stderr"):
                monkeypatch.setattr(
                    getattr(common, name), "print", lambda *a, **k: interrupt(signal.SIGTERM, None)
                )

    argv = [signed / words[1], *words[2:]]
    if "--sign" in words:
        argv.append(keys / "key.pem")
    work = tmp_path / "work"
    work.mkdir()
    signalled()
    result = pillar(words[0], *argv, "-o", work / outputs[0], expect=130)
    assert result.stderr.strip().splitlines()[-1] == (
        "error: interrupted; no artifact was written (existing files are unchanged)"
    )
    assert list(work.iterdir()) == []
    monkeypatch.undo()  # the outputs --force will replace, written whole
    pillar(words[0], *argv, "-o", work / outputs[0])
    previous = snapshot(work)
    signalled()
    pillar(words[0], *argv, "-o", work / outputs[0], "--force", expect=130)
    assert sorted(p.name for p in work.iterdir()) == sorted(outputs) and snapshot(work) == previous


def test_exports_and_signatures_are_readable_under_the_umask(pillar, signed, keys, tmp_path):
    """A safetensors export and an hf folder were 0600 and 0700 (the writer's and mkdtemp's modes)."""
    import os
    import stat

    previous = os.umask(0o022)
    try:
        pillar("export", signed / "rel.h5", "--format", "safetensors", "-o", tmp_path / "m.safetensors",
               "--sign", keys / "key.pem")  # fmt: skip
        pillar(
            "export", signed / "rel.h5", "--format", "hf", "-o", tmp_path / "hf", "--sign", keys / "key.pem"
        )
    finally:
        os.umask(previous)
    modes = {str(p.relative_to(tmp_path)): stat.S_IMODE(p.stat().st_mode) for p in tmp_path.rglob("*")}
    assert modes == {
        "m.safetensors": 0o644,
        "m.safetensors.sig": 0o644,
        "hf": 0o755,
        **{f"hf/{name}": 0o644 for name in ("README.md", "config.json", "model.safetensors", "model.sig")},
    }
