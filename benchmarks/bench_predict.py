"""rows/s of applying a released classifier: `pillar predict`'s paths against its exported modules, same
batch.

Rows of the table (a random head on a random-weight backbone; the arithmetic, not the accuracy, is measured):
features: predict           DPLinearClassifier.from_classifier(...).predict_proba on embedded features (numpy)
features: torch module      the export's module (--features-only) in torch, inference_mode features:
onnxruntime       the same module exported as ONNX, run by onnxruntime (CPU provider) images: predict
pillar_cli.release.inputs.classify_inputs on uint8 images (the rebuilt embedder, streamed in batches, as
`pillar predict --source` runs it), then the head images: torch module        the export's module from uint8
images (backbone inside), inference_mode images: onnxruntime         that module as ONNX under onnxruntime
with the largest |Δp| of each against predict. onnxruntime runs on the CPU here whatever the device. Run:
python benchmarks/bench_predict.py [--model resnet18] [--side 64] [--images 1024] [--rows 100000] [--device
cpu|cuda]
"""

from __future__ import annotations

import argparse
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from timing import timed

from pillar_cli.artifacts.classifier import Classifier
from pillar_cli.data.dataset import Dataset, no_labels
from pillar_cli.embedding.backbones import build_embedder
from pillar_cli.methods.estimator import DPLinearClassifier
from pillar_cli.privacy.events import GaussianEvent
from pillar_cli.release.export import ClassifierModule, export_classifier
from pillar_cli.release.inputs import classify_inputs


def random_classifier(recipe: dict, dim: int, k: int, classes: int, rng: np.random.Generator) -> Classifier:
    basis, _ = np.linalg.qr(rng.standard_normal((dim, k)))
    head = {"method": "pillar", "k": k, "row_l2_normalised": False, "unit_rows": False}
    privacy = {
        "epsilon": 1.0,
        "delta": 1e-5,
        "epsilon_target": 1.0,
        "accountant": "prv",
        "clip": 1.0,
        "steps": 1,
        "event": GaussianEvent(1.0).to_dict(),
        "epsilon_is_upper_bound": False,
        "covers": ["benchmark head (random weights)"],
        "not_covered": [],
        "summary": "benchmark head",
    }
    return Classifier(
        rng.standard_normal(dim).astype(np.float32),
        rng.uniform(0.5, 2, dim).astype(np.float32),
        (basis @ rng.standard_normal((k, classes))).astype(np.float32),
        rng.standard_normal(classes).astype(np.float32),
        None,
        [str(c) for c in range(classes)],
        head,
        recipe | {"feature_dim": dim},
        privacy,
    )


def onnx_session(classifier: Classifier, path: Path, features_only: bool):
    import onnxruntime

    export_classifier(classifier, "onnx", path, features_only=features_only)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return lambda x: session.run(None, {"input": x})[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--side", type=int, default=64)
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, (args.images, args.side, args.side, 3), dtype=np.uint8)
    embedder = build_embedder(
        args.model,
        images.shape[1:],
        pretrained=False,
        resize=args.side,
        crop=args.side,
        device=args.device,
        precision="fp32",
    )
    recipe = embedder.info() | {"image_shape": list(images.shape[1:])}
    classifier = random_classifier(recipe, embedder.feature_dim, args.k, 10, rng)
    estimator = DPLinearClassifier.from_classifier(classifier)
    features = rng.standard_normal((args.rows, embedder.feature_dim)).astype(np.float32)
    table = []
    with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
        seconds, reference = timed(lambda: estimator.predict_proba(features))
        table.append(("features: predict", len(features), seconds, 0.0))
        module = ClassifierModule(classifier, None).eval()
        seconds, out = timed(lambda: module(torch.from_numpy(features)).numpy())
        table.append(("features: torch module", len(features), seconds, np.abs(out - reference).max()))
        run = onnx_session(classifier, Path(tmp) / "f.onnx", True)
        seconds, out = timed(lambda: run(features))
        table.append(("features: onnxruntime", len(features), seconds, np.abs(out - reference).max()))

        dataset = Dataset("bench", images, no_labels(len(images)), [])
        seconds, reference = timed(
            lambda: classify_inputs(
                dataset,
                embedder,
                estimator.predict_proba,
                batch_size=args.batch,
                workers=0,
                on_batch=lambda n: None,
            )
        )
        table.append(("images: predict", len(images), seconds, 0.0))
        run = onnx_session(classifier, Path(tmp) / "i.onnx", False)  # moves the backbone to the CPU
        module = ClassifierModule(classifier, embedder.module()).eval()
        batches = [torch.from_numpy(images[i : i + args.batch]) for i in range(0, len(images), args.batch)]
        seconds, out = timed(lambda: np.concatenate([module(batch).numpy() for batch in batches]))
        table.append(("images: torch module (CPU)", len(images), seconds, np.abs(out - reference).max()))
        seconds, out = timed(lambda: np.concatenate([run(batch.numpy()) for batch in batches]))
        table.append(("images: onnxruntime", len(images), seconds, np.abs(out - reference).max()))
    print(
        f"{args.model} at {args.side} px, {embedder.feature_dim} features, k = {args.k}, 10 classes, "
        f"batch {args.batch}, embedder on {args.device}, torch threads {torch.get_num_threads()}"
    )
    print(f"{'path':30} {'rows':>8} {'rows/s':>12} {'max |Δp| vs predict':>20}")
    for name, rows, seconds, delta in table:
        print(f"{name:30} {rows:>8} {rows / seconds:>12,.0f} {delta:>20.2e}")


if __name__ == "__main__":
    main()
