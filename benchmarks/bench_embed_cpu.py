"""CPU embedding against the best CPU runtime: images/s of `pillar embed`'s extraction path (stream_split, the
embedder `build_embedder` makes) beside ONNX Runtime's and torch's model-only throughput of the same backbone,
on the same images and cores, in one run; and the largest relative difference between the features of the two
runtimes.

Rows, per backbone (28×28 grey images resized to 224 px, batches of 64): onnxruntime model only   the backbone
exported to ONNX, run by a default ONNX Runtime session (its own threads and memory arena) on preprocessed
float32 batches of 64 torch model only         the timm module, channels_last, inference_mode, fp32, on the
same batches pillar embed, torch      stream_split with --runtime torch (uint8 batches in, preprocessing
included) pillar embed, auto       stream_split with the default runtime (ONNX Runtime for fp32 on the CPU)
Backbones: efficientnet-lite0 (its packaged ImageNet weights) and resnet50 (random weights: the speed is the
same). Throughputs are medians of --repeats timed passes after one warm-up pass. Run: python
benchmarks/bench_embed_cpu.py [--images 512] [--repeats 3] [--backbones efficientnet-lite0,resnet50]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime
import torch

from pillar_cli.data.dataset import Dataset
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.embedding.extraction import FeatureStore, stream_split
from pillar_cli.embedding.onnx_backbone import exported

BATCH = 64


def throughput(run, images: int, repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return images / statistics.median(times)


def embed(embedder, dataset: Dataset) -> np.ndarray:
    ids = np.arange(len(dataset.inputs))
    with tempfile.TemporaryDirectory() as directory:
        store = FeatureStore(
            Path(directory) / "bench.partial", {}, {"all": len(ids)}, embedder.feature_dim, False
        )
        stream_split(embedder, dataset, ids, BATCH, store, "all")
        features = np.asarray(store.features("all")[:])
        store.finish()
    return features


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--images", type=int, default=512)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backbones", default="efficientnet-lite0,resnet50")
    args = parser.parse_args()
    images = np.random.default_rng(0).integers(0, 256, (args.images, 28, 28, 1), dtype=np.uint8)
    dataset = Dataset("random", images, np.zeros(len(images), np.int64), ["0"])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {args.images} images of 28×28 → 224 "
        "px"
    )
    print("| backbone | path | images/s | of ONNX Runtime model only |")
    print("|---|---|---|---|")
    for name in args.backbones.split(","):
        pretrained = name == "efficientnet-lite0"
        torch_path = build_embedder(
            name, (28, 28, 1), resize=224, device="cpu", runtime="torch", pretrained=pretrained
        )
        auto = build_embedder(name, (28, 28, 1), resize=224, device="cpu", pretrained=pretrained)
        with torch.inference_mode():
            batches = [
                torch_path.preprocessing.apply(torch.from_numpy(images[i : i + BATCH]))
                for i in range(0, len(images), BATCH)
            ]
        channels_last = [batch.contiguous(memory_format=torch.channels_last) for batch in batches]

        def torch_model() -> None:
            with torch.inference_mode():
                for batch in channels_last:
                    torch_path.model(batch)

        session = onnxruntime.InferenceSession(
            exported(torch_path.model, 224), providers=["CPUExecutionProvider"]
        )
        arrays = [batch.contiguous().numpy() for batch in batches]
        reference = throughput(
            lambda: [session.run(None, {"images": batch}) for batch in arrays], len(images), args.repeats
        )
        rows = [
            ("onnxruntime model only", reference),
            ("torch model only", throughput(torch_model, len(images), args.repeats)),
            (
                "pillar embed, torch",
                throughput(lambda: embed(torch_path, dataset), len(images), args.repeats),
            ),
            (
                f"pillar embed, auto ({auto.runtime})",
                throughput(lambda: embed(auto, dataset), len(images), args.repeats),
            ),
        ]
        for path, speed in rows:
            print(f"| {name} | {path} | {speed:.1f} | {speed / reference:.2f} |", flush=True)
        ours, theirs = embed(auto, dataset), embed(torch_path, dataset)
        print(
            f"| {name} | largest |Δ| / largest |feature| between the runtimes | "
            f"{np.abs(ours - theirs).max() / np.abs(theirs).max():.1e} | |"
        )


if __name__ == "__main__":
    main()
