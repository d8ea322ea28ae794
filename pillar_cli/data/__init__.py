"""Dataset sources (a registry by name), their readers, and the seeded private / public / val / test split.

Embedding builds on it.

May import: `errors`, `randomness` (the keyed draws that decide each row's split).
"""

from pillar_cli.data.dataset import Dataset
from pillar_cli.data.sources import SOURCES, SourceOptions, load_source
from pillar_cli.data.splits import SplitPlan, make_splits

__all__ = ["SOURCES", "Dataset", "SourceOptions", "SplitPlan", "load_source", "make_splits"]
