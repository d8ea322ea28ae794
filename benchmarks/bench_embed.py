"""images/s of `pillar embed`'s extraction path against a naive loop, on the same images and model.

naive:  fp32, each image resized on the CPU with PIL, batches of 32, no DataLoader workers, torch.no_grad
pillar: pillar_cli.embedding.extract with the backbone's TimmEmbedder (batched uint8 transfer, resize and crop
        as one tensor op on the device, channels_last, inference_mode), in fp32 and with bf16 autocast
        (`--precision bf16`; the default on CUDA)
Run: python benchmarks/bench_embed.py [--model resnet18] [--images 512] [--device cpu|cuda] [--batch 256]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import timm
import torch
from PIL import Image

from pillar_cli.backbones import build_embedder
from pillar_cli.data.dataset import Dataset
from pillar_cli.embedding import FeatureStore, stream_split


def naive_loop(model: torch.nn.Module, images: np.ndarray, size: int, crop: int, device: torch.device) -> np.ndarray:
    mean = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    features = []
    with torch.no_grad():
        for start in range(0, len(images), 32):
            batch = []
            for image in images[start:start + 32]:
                resized = Image.fromarray(image).resize((size, size), Image.BILINEAR)
                offset = (size - crop) // 2
                array = np.asarray(resized, dtype=np.float32)[offset:offset + crop, offset:offset + crop] / 255.0
                batch.append((torch.from_numpy(array).permute(2, 0, 1) - mean) / std)
            features.append(model(torch.stack(batch).to(device)).cpu().numpy())
    return np.concatenate(features)


def pillar_path(embedder, dataset: Dataset, batch: int) -> None:
    """What `pillar embed` runs per split: batches streamed into the scratch HDF5 store."""
    ids = np.arange(len(dataset.inputs))
    with tempfile.TemporaryDirectory() as directory:
        store = FeatureStore(Path(directory) / "bench.partial", {}, {"all": len(ids)}, embedder.feature_dim, False)
        stream_split(embedder, dataset, ids, batch, store, "all")
        store.finish()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--size", type=int, default=128, help="resize before the centre crop")
    parser.add_argument("--crop", type=int, default=112)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    images = np.random.default_rng(0).integers(0, 255, (args.images, 32, 32, 3), dtype=np.uint8)
    embedder = build_embedder(args.model, images.shape[1:], pretrained=False, resize=args.size, crop=args.crop,
                              device=args.device, precision="fp32")
    fast = build_embedder(args.model, images.shape[1:], pretrained=False, resize=args.size, crop=args.crop,
                          device=args.device, precision="bf16")
    dataset = Dataset("bench", images, np.zeros(len(images), dtype=np.int64), ["0"])
    naive_model = timm.create_model(args.model, pretrained=False, num_classes=0).eval().to(embedder.device)
    naive_model.load_state_dict(embedder.model.state_dict())  # same weights, default (contiguous) layout
    warm = Dataset("warm", images[: args.batch], np.zeros(args.batch, dtype=np.int64), ["0"])
    pillar_path(embedder, warm, args.batch)  # warm-up (kernel selection, allocator)
    pillar_path(fast, warm, args.batch)
    naive_loop(naive_model, images[:32], args.size, args.crop, embedder.device)
    timings = {}
    for name, run in (("pillar", lambda: pillar_path(embedder, dataset, args.batch)),
                      ("pillar-bf16", lambda: pillar_path(fast, dataset, args.batch)),
                      ("naive", lambda: naive_loop(naive_model, images, args.size, args.crop,
                                                   embedder.device))):
        if embedder.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        run()
        if embedder.device.type == "cuda":
            torch.cuda.synchronize()
        timings[name] = len(images) / (time.perf_counter() - start)
    device = torch.cuda.get_device_name() if embedder.device.type == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"{args.model} at {args.crop}px on {device}, {args.images} images: naive (fp32) {timings['naive']:.1f} img/s; "
          f"pillar fp32 {timings['pillar']:.1f} img/s ({timings['pillar'] / timings['naive']:.2f}x); "
          f"pillar bf16 {timings['pillar-bf16']:.1f} img/s ({timings['pillar-bf16'] / timings['naive']:.2f}x)")


if __name__ == "__main__":
    main()
