"""images/s of `pillar embed`'s extraction path against a naive loop, on the same images and model.

Rows of the table (one model, random weights, the same preprocessing: resize the short side, centre crop):
naive fp32         each image resized on the CPU with PIL, batches of 32, no DataLoader workers, torch.no_grad
pillar fp32        pillar_cli.embedding.extraction.stream_split with the backbone's TimmEmbedder (batched
uint8 transfer, resize and crop as one tensor op on the device, channels_last, inference_mode, one batch in
flight while the previous is stored), fp32 pillar bf16        the same with bf16 autocast (`--precision bf16`;
the default on CUDA) pillar bf16, disk  the same, images read lazily from a PatchCamelyon-layout HDF5 file by
--workers processes pillar CLI, disk   `python -m pillar_cli embed --source pcam ...` as a user runs it:
start-up, model build, split, artifact write and hashing included and, to say where the time goes on a GPU:
the model alone on device-resident preprocessed batches (compute bound), the preprocessing alone, and the
host-to-device copy alone. bf16 features are compared with fp32 features of the same images (relative L2 error
per row, cosine similarity). Run: python benchmarks/bench_embed.py [--model resnet50] [--images 8192] [--side
32] [--device cuda]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import timm
import torch
from PIL import Image

from pillar_cli.data.dataset import Dataset
from pillar_cli.data.readers import read_pcam
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.extraction import FeatureStore, stream_split


def naive_loop(
    model: torch.nn.Module, images: np.ndarray, size: int, crop: int, device: torch.device
) -> np.ndarray:
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    features = []
    with torch.no_grad():
        for start in range(0, len(images), 32):
            batch = []
            for image in images[start : start + 32]:
                resized = Image.fromarray(image).resize((size, size), Image.BILINEAR)
                offset = (size - crop) // 2
                array = (
                    np.asarray(resized, dtype=np.float32)[offset : offset + crop, offset : offset + crop]
                    / 255.0
                )
                batch.append((torch.from_numpy(array).permute(2, 0, 1) - mean) / std)
            features.append(model(torch.stack(batch).to(device)).cpu().numpy())
    return np.concatenate(features)


def pillar_path(embedder, dataset: Dataset, batch: int, workers: int = 0) -> np.ndarray:
    """What `pillar embed` runs per split: batches streamed into the scratch HDF5 store."""
    ids = np.arange(len(dataset.inputs))
    with tempfile.TemporaryDirectory() as directory:
        store = FeatureStore(
            Path(directory) / "bench.partial", {}, {"all": len(ids)}, embedder.feature_dim, False
        )
        stream_split(embedder, dataset, ids, batch, store, "all", workers=workers)
        features = store.features("all")
        store.finish()
    return features


def write_pcam(root: Path, images: np.ndarray) -> None:
    """`images` as the train part of a PatchCamelyon-layout folder (a small test part beside it)."""
    for part, x in (("train", images), ("test", images[:256])):
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_x.h5", "w") as h5:
            h5.create_dataset("x", data=x, chunks=(64, *x.shape[1:]))
        with h5py.File(root / f"camelyonpatch_level_2_split_{part}_y.h5", "w") as h5:
            h5["y"] = (np.arange(len(x)) % 2).reshape(-1, 1, 1, 1).astype(np.uint8)


class Clock:
    """Wall-clock seconds of a callable, the device synchronised on both ends."""

    def __init__(self, device: torch.device):
        self.device = device

    def __call__(self, run) -> tuple[float, object]:
        self._sync()
        start = time.perf_counter()
        result = run()
        self._sync()
        return time.perf_counter() - start, result

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize()


def agreement(reference: np.ndarray, other: np.ndarray) -> str:
    error = np.linalg.norm(other - reference, axis=1) / np.linalg.norm(reference, axis=1)
    cosine = (other * reference).sum(1) / (np.linalg.norm(other, axis=1) * np.linalg.norm(reference, axis=1))
    return (
        f"relative L2 error per row: median {np.median(error):.2e}, max {error.max():.2e}; "
        f"cosine similarity min {cosine.min():.6f}"
    )


def where_time_goes(embedder, images: np.ndarray, batch: int, clock: Clock) -> dict[str, float]:
    """images/s of each part of a GPU step alone: copy in, preprocess, model (bf16, channels_last)."""
    pinned = torch.from_numpy(images[:batch]).pin_memory()
    on_device = pinned.to(embedder.device)
    ready = embedder.preprocessing.apply(on_device).contiguous(memory_format=torch.channels_last)
    repeats = max(1, len(images) // batch)

    def copy_in():
        for _ in range(repeats):
            pinned.to(embedder.device, non_blocking=True)

    def preprocess():
        for _ in range(repeats):
            embedder.preprocessing.apply(on_device).contiguous(memory_format=torch.channels_last)

    @torch.inference_mode()
    def model():
        with torch.autocast(embedder.device.type, dtype=torch.bfloat16, enabled=embedder.bf16):
            for _ in range(repeats):
                embedder.model(ready)

    rates = {}
    for name, run in (("host-to-device copy", copy_in), ("preprocessing", preprocess), ("model", model)):
        run()  # warm-up
        rates[name] = repeats * batch / clock(run)[0]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument(
        "--naive-images", type=int, default=None, help="images for the naive loop (default: all)"
    )
    parser.add_argument("--side", type=int, default=32, help="side of the source images (uint8, square, RGB)")
    parser.add_argument("--size", type=int, default=128, help="resize before the centre crop")
    parser.add_argument("--crop", type=int, default=112)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=4, help="DataLoader workers for the on-disk source")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    images = np.random.default_rng(0).integers(0, 255, (args.images, args.side, args.side, 3), dtype=np.uint8)
    common = {"pretrained": False, "resize": args.size, "crop": args.crop, "device": args.device}
    embedder = build_embedder(args.model, images.shape[1:], precision="fp32", **common)
    fast = build_embedder(args.model, images.shape[1:], precision="bf16", **common)
    clock = Clock(embedder.device)
    dataset = Dataset("bench", images, np.zeros(len(images), dtype=np.int64), ["0"])
    naive_model = timm.create_model(args.model, pretrained=False, num_classes=0).eval().to(embedder.device)
    naive_model.load_state_dict(embedder.model.state_dict())  # same weights, default (contiguous) layout
    warm = Dataset("warm", images[: 2 * args.batch], np.zeros(2 * args.batch, dtype=np.int64), ["0"])
    pillar_path(embedder, warm, args.batch)  # warm-up (kernel selection, allocator)
    pillar_path(fast, warm, args.batch)
    naive_loop(naive_model, images[:32], args.size, args.crop, embedder.device)
    naive_images = images[: args.naive_images or len(images)]

    rows: list[tuple[str, float]] = []
    seconds, _ = clock(lambda: naive_loop(naive_model, naive_images, args.size, args.crop, embedder.device))
    rows.append(("naive fp32 (in memory)", len(naive_images) / seconds))
    seconds, fp32 = clock(lambda: pillar_path(embedder, dataset, args.batch))
    rows.append(("pillar fp32 (in memory)", len(images) / seconds))
    seconds, bf16 = clock(lambda: pillar_path(fast, dataset, args.batch))
    rows.append(("pillar bf16 (in memory)", len(images) / seconds))
    with tempfile.TemporaryDirectory() as directory:
        write_pcam(Path(directory), images)
        on_disk = read_pcam(Path(directory))
        seconds, _ = clock(lambda: pillar_path(fast, on_disk, args.batch, args.workers))
        rows.append((f"pillar bf16 (HDF5 on disk, {args.workers} workers)", len(images) / seconds))
        command = [
            sys.executable,
            "-m",
            "pillar_cli",
            "embed",
            "--source",
            "pcam",
            "--path",
            directory,
            "--backbone",
            args.model,
            "--no-pretrained",
            "--resize",
            str(args.size),
            "--crop",
            str(args.crop),
            "--device",
            args.device,
            "--precision",
            "bf16",
            "--batch-size",
            str(args.batch),
            "--workers",
            str(args.workers),
            "--val-fraction",
            "0",
            "-o",
            str(Path(directory) / "emb.h5"),
        ]
        start = time.perf_counter()
        launched = subprocess.run(command, capture_output=True, text=True)
        if launched.returncode:
            sys.exit(f"pillar embed failed:\n{launched.stderr}")
        rows.append(
            (
                f"pillar CLI end to end (HDF5 on disk, {args.workers} workers)",
                (len(images) + 256) / (time.perf_counter() - start),
            )
        )
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "pillar_cli", "embed", "--help"], capture_output=True, check=True
        )
        startup = time.perf_counter() - start

    device = (
        torch.cuda.get_device_name()
        if embedder.device.type == "cuda"
        else f"CPU, {torch.get_num_threads()} threads"
    )
    print(
        f"{args.model}, {args.side}px uint8 images resized to {args.size} and cropped to {args.crop}, batch "
        f"{args.batch}, on {device} (torch {torch.__version__}); {len(images)} images "
        f"({len(naive_images)} for the naive loop)"
    )
    naive_rate = rows[0][1]
    for name, rate in rows:
        print(f"  {name:<58} {rate:9.1f} img/s  {rate / naive_rate:6.2f}x naive")
    print(f"  (the CLI's start-up alone, `python -m pillar_cli embed --help`: {startup:.1f} s)")
    print(f"  bf16 vs fp32 features: {agreement(fp32, bf16)}")
    if embedder.device.type == "cuda":
        print("  where the time goes (each part alone, images/s):")
        for name, rate in where_time_goes(fast, images, args.batch, clock).items():
            print(f"    {name:<56} {rate:9.1f} img/s")


if __name__ == "__main__":
    main()
