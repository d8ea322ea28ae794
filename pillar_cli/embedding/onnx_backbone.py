"""A frozen backbone run by ONNX Runtime on the CPU: 1.6-3× torch's throughput for the same module on the same
cores (benchmarks/bench_embed_cpu.py), features equal to torch's to float32 rounding (a relative 1e-5).

The backbone alone is exported, once per embedder, in memory (torch's TorchScript-based exporter, opset 17, a
batch axis left free); the preprocessing (resize with antialiasing, crop, normalisation) stays in torch, which
ONNX cannot express, and hands the exported graph float32 NCHW batches.
"""

from __future__ import annotations

import io
import warnings

import numpy as np

from pillar_cli.lazy import torch

RUNTIMES = ("auto", "torch", "onnxruntime")
CHUNK = 64  # images per ONNX Runtime run


def export_failure() -> tuple[type[Exception], ...]:
    """What torch's exporter raises for a module it cannot express in ONNX (an operator without a
    symbolic)."""
    return (torch.onnx.errors.OnnxExporterError, torch.onnx.errors.UnsupportedOperatorError, RuntimeError)


def onnxruntime_available() -> bool:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def exported(model: torch.nn.Module, size: int) -> bytes:
    """`model` (input (N, 3, size, size) float32 → features (N, D)) as an ONNX graph, a batch axis left
    free."""
    graph = io.BytesIO()
    example = torch.zeros(2, 3, size, size)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the exporter's deprecation and tracer warnings
        try:
            torch.onnx.export(
                model.to(memory_format=torch.contiguous_format).eval(),
                (example,),
                graph,
                input_names=["images"],
                output_names=["features"],
                opset_version=17,
                dynamic_axes={"images": {0: "batch"}, "features": {0: "batch"}},
                dynamo=False,
            )
        finally:
            model.to(memory_format=torch.channels_last)  # as torch runs it
    return graph.getvalue()


class OnnxBackbone:
    """`model` as an ONNX Runtime session on the CPU, run CHUNK images at a time: as fast as larger runs, and
    its memory arena holds the activations of CHUNK images only (a 3.0 GB peak for EfficientNet-Lite0 at 224
    px, where 256-image runs grew it to 8 GB and torch peaks at 4.3 GB)."""

    def __init__(self, model: torch.nn.Module, size: int, threads: int):
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = 3
        self.session = onnxruntime.InferenceSession(
            exported(model, size), options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, images: torch.Tensor) -> torch.Tensor:
        """float32 NCHW images → float32 features, on the CPU."""
        batch = np.ascontiguousarray(images.detach().cpu().numpy(), dtype=np.float32)
        return torch.from_numpy(
            np.concatenate(
                [
                    self.session.run(None, {"images": batch[start : start + CHUNK]})[0]
                    for start in range(0, len(batch), CHUNK)
                ]
            )
        )
