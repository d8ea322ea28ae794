"""DP fine-tuning of a whole network through opacus: the comparison that motivates linear probing (Figure 2 of
the semi-private learning paper), and the non-private pre-training on public labelled data it starts from.

Noise is calibrated and ε recomputed by pillar's accountants, so a fine-tuned network's ε is comparable with
every linear head's.

May import: `errors`, `lazy`, `randomness`, `artifacts`, `privacy`, `gsd.probes` (the pixel-row layout),
`embedding.networks`, `embedding.weights` (the networks, checkpoint loading), `methods.estimator` (the softmax
classifier a released network is, and its class labels), `methods.plan` (where a guarantee is made).
"""

from pillar_cli.finetune.runs import (
    METHODS,
    Pretrained,
    check_disjoint,
    network_spec,
    networks_artifact,
    pretrained,
    train_networks,
)
from pillar_cli.finetune.training import FinetuneConfig, FinetuneResult, finetune, network

__all__ = [
    "METHODS",
    "FinetuneConfig",
    "FinetuneResult",
    "Pretrained",
    "check_disjoint",
    "finetune",
    "network",
    "network_spec",
    "networks_artifact",
    "pretrained",
    "train_networks",
]
