"""pillar audit on MNIST-5k: the one-run canary audit is sound on the real engine and catches a planted bug;
the ledger check agrees with every kind of model the sweeps write and flags a forged claim; bad input is
refused."""

from __future__ import annotations

import json

import pytest
from checks import assert_clean_failure, edited_copy

from pillar_cli import artifacts
from pillar_cli.audit.ledger import check_ledger
from pillar_cli.cli import load_command
from pillar_cli.privacy import event_from_dict
from pillar_cli.privacy.risk import risk_of

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command

CONFIG = ["--train", "--k 10 --eps 1 --lr 0.5 --steps 300 --batch-size 512", "--canaries", "600"]


def test_the_audit_is_sound_and_catches_a_run_without_noise(mnist, pillar, tmp_path):
    """The sound run is audited at 99.9 % confidence: at 95 % each of its intervals misses by chance up to one
    run in forty, and a sound audit then flags a point above the curve (it did, once in a CI run); the run
    without noise is caught at the default 95 %."""
    out = tmp_path / "audit.h5"
    sound = json.loads(
        pillar(
            "audit",
            "canaries",
            mnist["emb"],
            "-p",
            mnist["pca"],
            *CONFIG,
            "--confidence",
            "0.999",
            "-o",
            out,
            "--json",
        ).stdout
    )
    assert 0 <= sound["epsilon_lower_bound"] <= sound["epsilon_claimed"] <= 1
    assert sound["guesses"] == 120 and sound["planted_bug"] == "none"
    stored = artifacts.read(out, "audit")
    assert stored.attrs["correct"] == sound["correct"] and stored.array("canaries/included").shape == (600,)
    broken = json.loads(
        pillar(
            "audit", "canaries", mnist["emb"], "-p", mnist["pca"], *CONFIG, "--plant", "no-noise", "--json"
        ).stdout
    )
    assert broken["correct"] == 120 and broken["epsilon_lower_bound"] > 3 > broken["epsilon_claimed"]
    # on the trade-off curve's axes: the sound run's tests stay under the claimed curve, the broken run's top
    # 10 % (60 canaries, every one in) sit above it
    curve = risk_of(event_from_dict(sound["event"]))
    assert [p["share"] for p in sound["points"]] == [0.01, 0.05, 0.1, 0.25, 0.5]
    assert all(p["tpr_bound"] == curve.tpr_at(p["fpr"]) and not p["above_curve"] for p in sound["points"])
    assert [p["above_curve"] for p in broken["points"]] == [False, True, True, True, True]
    assert stored.attrs["points"] == sound["points"]
    assert "--plant" not in pillar("audit", "canaries", "--help").stdout


def test_ledger_check_agrees_with_every_model_kind_and_flags_a_forged_claim(mnist, pillar, tmp_path):
    common = [
        "train-private",
        mnist["emb"],
        "-p",
        mnist["pca"],
        "--k",
        "10",
        "--eps",
        "0.5,inf",
        "--seed",
        "0,1",
    ]
    pillar(*common, "--lr", "0.1,1", "--steps", "50", "-o", tmp_path / "val.h5")
    pillar(
        *common, "--lr", "0.1,1", "--steps", "50", "--select", "accounted", "-o", tmp_path / "accounted.h5"
    )
    pillar(*common, "--method", "public-lda,dp-ls", "-o", tmp_path / "closed.h5")
    for name in ("val", "accounted", "closed"):
        runs = json.loads(pillar("audit", "ledger", tmp_path / f"{name}.h5", "--json").stdout)["runs"]
        assert runs and all(run["status"] == "ok" for run in runs), runs
        assert all(run["steps_run"] == run["steps_accounted"] for run in runs)
    forged = tmp_path / "forged.h5"
    with edited_copy(tmp_path / "val.h5", forged) as h5:  # a writer that under-reports ε, stamped as its own
        h5["runs/epsilon_spent"][0] = 0.47
    # every read recomputes the claim: refused at once
    result = pillar("audit", "ledger", forged, expect=None)
    assert (
        result.exit_code == 3
        and "model artifact claims ε = 0.47 for a DP event that spends ε = " in result.stderr
    )
    model = artifacts.read(tmp_path / "val.h5", "model")  # the ledger check itself, on the claim in memory
    model.arrays["runs/epsilon_spent"] = model.arrays["runs/epsilon_spent"].copy()
    model.arrays["runs/epsilon_spent"][0] = 0.47
    flagged = [check.problems for check in check_ledger(model)]
    assert flagged[0][0].startswith("ε recomputed ") and flagged[0][0].endswith(" > claimed 0.47")
    assert flagged[1:] == [[]] * 7
    tampered = tmp_path / "tampered.h5"
    with edited_copy(tmp_path / "val.h5", tampered, restamp=False) as h5:
        h5["runs/epsilon_spent"][0] = 0.4
    assert_clean_failure(
        pillar("audit", "ledger", tampered, expect=None),
        3,
        f"{tampered} was modified after it was written: its content no longer matches its content hash",
    )


@pytest.mark.parametrize(
    ("flags", "code", "message"),
    [
        (["--canaries", "5"], 2, "--canaries must be at least 10 (got 5)"),
        (["--confidence", "1"], 2, "--confidence must be in (0, 1) (got 1.0)"),
        (
            ["--train", "--k 5 --steps 10 --method jl"],
            2,
            "method 'jl' cannot be audited with input canaries: its "
            "random projection would mix the canaries' coordinates into the features",
        ),
        (
            ["--train", "--k 5 --steps 10 --eps 0"],
            2,
            "--eps must be > 0 (got 0.0); use 'inf' for non-private training",
        ),
        (
            ["--train", "--k 5 --stepz 10"],
            2,
            "--train: No such option: --stepz (Possible options: --eps, --seed, --steps)",
        ),
        (
            ["--train", "--k 5 --eps 1,4"],
            2,
            "one configuration to audit: a single --eps and --lr in --train (or audit white-box)",
        ),
    ],
)
def test_bad_audit_inputs(mnist, pillar, tmp_path, flags, code, message):
    out = tmp_path / "a.h5"
    if flags[0] != "--train":
        flags = ["--train", "--k 5 --steps 10", *flags]
    result = pillar("audit", "canaries", mnist["emb"], "-p", mnist["pca"], *flags, "-o", out, expect=None)
    assert_clean_failure(result, code, message, out)


def test_the_audited_configuration_lists_its_flags_and_each_sub_command_has_a_few_options(pillar):
    listed = pillar("audit", "canaries", "--train=--help").stdout
    assert all(
        flag in listed
        for flag in (
            "--method",
            "--k",
            "--eps",
            "--lr",
            "--steps",
            "--batch-size",
            "--clip",
            "--delta",
            "--accountant",
            "--seed",
            "--privacy-unit",
        )
    )
    shown = pillar("audit", "--help").stdout
    assert all(name in shown for name in ("ledger", "canaries", "white-box", "neighbours"))
    for name, command in load_command("audit").commands.items():
        assert len([p for p in command.params if p.param_type_name == "option"]) <= 12, name


def test_ledger_of_the_wrong_kind(mnist, pillar):
    assert_clean_failure(
        pillar("audit", "ledger", mnist["pca"], expect=None),
        3,
        f"{mnist['pca']} is a projection artifact, expected model or classifier",
    )


WHITE_BOX = [
    "--train",
    "--k 10 --eps 1,4 --lr 0.5 --steps 1 --batch-size all",
    "--canaries",
    "2000",
    "--guesses",
    "400",
]


def test_the_white_box_audit_holds_on_secret_noise_and_breaks_reproducible_or_shared_noise(
    mnist, pillar, tmp_path
):
    out = tmp_path / "white.h5"
    sound = pillar("audit", "white-box", mnist["emb"], "-p", mnist["pca"], *WHITE_BOX, "-o", out)
    attacks = artifacts.read(out, "audit").attrs["white_box"]["attacks"]
    names = [attack["name"] for attack in attacks]
    assert (
        names[:2] == ["head (ε=1, lr=0.5)", "head (ε=4, lr=0.5)"]
        and "regenerate seed 0 (ε=1, lr=0.5)" in names
    )
    assert "cancel (ε=4, lr=0.5) − (ε=1, lr=0.5)" in names and "BROKEN" not in sound.stdout
    assert not any(attack["breaks"] for attack in attacks)
    seeded = pillar(
        "audit",
        "white-box",
        mnist["emb"],
        "-p",
        mnist["pca"],
        *WHITE_BOX,
        "--noise-seed",
        "7",
        "--json",
        expect=5,
    )
    regenerated = {a["name"]: a for a in json.loads(seeded.stdout)["white_box"]["attacks"]}
    assert regenerated["regenerate seed 7 (ε=1, lr=0.5)"]["correct"] == 800
    assert "NOT differentially private" in seeded.stderr
    shared = pillar(
        "audit",
        "white-box",
        mnist["emb"],
        "-p",
        mnist["pca"],
        *WHITE_BOX,
        "--plant",
        "shared-noise",
        "--json",
        expect=5,
    )
    cancelled = json.loads(shared.stdout)["white_box"]
    assert cancelled["strongest"].startswith("cancel") and cancelled["attacks"][-1]["correct"] == 800
