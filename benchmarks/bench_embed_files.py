"""images/s and peak memory of `pillar embed` on a folder of JPEGs: streamed (files decoded in DataLoader
workers, features copied into the artifact by blocks) against loading every image first (decode all, serially,
into one array, then embed it: how image sources were read before they were streamed).

Each row is one child process embedding the whole folder (`--source image-folder --param size=64`, all splits,
the backbone at 64 × 64 with random weights);
peak RSS is the largest resident set of that process or of any DataLoader worker it started
(resource.getrusage(RUSAGE_CHILDREN) of a fresh wrapper process). The JPEGs are generated once (smooth random
images, 256 × 256, ten class folders) under --root and reused.

Run: python benchmarks/bench_embed_files.py [--images 20000,60000] [--backbones pixels,resnet18] [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from PIL import Image

SIDE = 256

LOAD_ALL = """
import sys, numpy as np
from pathlib import Path
from pillar_cli.cli.common import save
from pillar_cli.data import SplitPlan, load_source, SourceOptions
from pillar_cli.data.dataset import Dataset
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.job import EmbeddingJob
from pillar_cli import artifacts
root, backbone, out = sys.argv[1:4]
lazy = load_source("image-folder", SourceOptions(Path(root), {"size": "64"}))
images = lazy.inputs[np.arange(len(lazy.inputs))]  # decode all
dataset = Dataset(lazy.name, images, lazy.labels, lazy.class_names)
embedder = build_embedder(backbone, dataset.inputs.shape[1:], pretrained=False, resize=64, crop=64, seed=0)
job = EmbeddingJob.of(dataset, SplitPlan())
job.run(embedder, Path(out), {}, lambda a: artifacts.write(out, a), workers=0)
"""

MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def generate(root: Path, count: int) -> Path:
    """`count` smooth random JPEGs (a few KB each) in ten class folders; reused when already there."""
    folder = root / f"jpegs-{count}"
    if (folder / "done").exists():
        return folder
    rng = np.random.default_rng(0)
    ramp = np.linspace(0, 1, SIDE, dtype=np.float32)
    grain = rng.normal(0, 8, (16, SIDE, SIDE, 3)).astype(np.float32)  # a bank of noise fields, reused
    for name in range(10):
        (folder / f"class{name}").mkdir(parents=True, exist_ok=True)
    for i in range(count):
        colours = rng.integers(0, 255, (2, 3)).astype(np.float32)
        image = colours[0] * ramp[:, None, None] + colours[1] * ramp[None, :, None] * (
            1 - ramp[:, None, None]
        )
        image = np.clip(image + grain[i % 16], 0, 255).astype(np.uint8)
        Image.fromarray(image).save(folder / f"class{i % 10}" / f"{i:06d}.jpg", quality=85)
    (folder / "done").touch()
    return folder


def measure(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of `command` run to completion in a fresh wrapper process."""
    result = subprocess.run(
        [sys.executable, "-c", MEASURE, *command], check=True, capture_output=True, text=True
    )
    seconds, kib = result.stdout.split()
    return float(seconds), int(kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", default="20000,60000")
    parser.add_argument("--backbones", default="pixels,resnet18")
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "pillar-bench-jpegs")
    args = parser.parse_args()
    rows = []
    for count in map(int, args.images.split(",")):
        folder = generate(args.root, count)
        for backbone in args.backbones.split(","):
            with tempfile.TemporaryDirectory() as work:
                embed = [
                    sys.executable,
                    "-m",
                    "pillar_cli",
                    "embed",
                    "--source",
                    "image-folder",
                    "--path",
                    str(folder),
                    "--param",
                    "size=64",
                    "--backbone",
                    backbone,
                    "--no-pretrained",
                    "--resize",
                    "64",
                    "--crop",
                    "64",
                    "--force",
                ]
                paths = {
                    "load all, serial": [
                        sys.executable,
                        "-c",
                        LOAD_ALL,
                        str(folder),
                        backbone,
                        f"{work}/all.h5",
                    ],
                    "streamed, 1 worker": [*embed, "--workers", "1", "-o", f"{work}/w1.h5"],
                    "streamed, 2 workers": [*embed, "--workers", "2", "-o", f"{work}/w2.h5"],
                }
                for path, command in paths.items():
                    seconds, peak = measure(command)
                    rows.append(
                        {
                            "images": count,
                            "backbone": backbone,
                            "path": path,
                            "seconds": round(seconds, 1),
                            "images_per_s": round(count / seconds),
                            "peak_rss_mib": round(peak),
                        }
                    )
                    print(json.dumps(rows[-1]), flush=True)
    print("\n| images | backbone | path | s | images/s | peak RSS (MiB) |\n|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['images']:,} | {row['backbone']} | {row['path']} | {row['seconds']} | "
            f"{row['images_per_s']} | {row['peak_rss_mib']} |"
        )


if __name__ == "__main__":
    main()
