"""DP fine-tuning of a whole network through opacus: the comparison that motivates linear probing (Figure 2 of the
semi-private learning paper).

Imports `errors`, `devices`, `privacy` (noise calibrated and ε recomputed by pillar's accountants, so a fine-tuned
network's ε is comparable with every linear head's), `gsd.probes` (the small CNN and the pixel-row layout) and
`embedding.backbones` (checkpoint loading).
"""

from pillar_cli.finetune.training import FinetuneConfig, FinetuneResult, finetune, network, pixel_images

__all__ = ["FinetuneConfig", "FinetuneResult", "finetune", "network", "pixel_images"]
