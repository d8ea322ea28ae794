"""HDF5 artifacts, schema version 3: the only way stages exchange data.

Owns the artifact core (atomic write, kind and schema checks, content hashes, provenance) and, per kind, the
schema of what is stored. Every domain may use it; it uses no domain.

May import: `errors`, `version`, `privacy` (a claimed ε, recomputed from its event tree on read), `randomness`
(whether a file's noise is reproducible).
"""

from pillar_cli.artifacts.core import (
    KINDS,
    SCHEMA_VERSION,
    Artifact,
    InputRef,
    Provenance,
    read,
    read_provenance,
    write,
)
from pillar_cli.artifacts.embeddings import Split, embeddings_artifact, parse_ref, read_split
from pillar_cli.artifacts.feature_recipe import FeatureRecipe
from pillar_cli.artifacts.integrity import content_hash
from pillar_cli.artifacts.layout import RESERVED_ATTRS
from pillar_cli.artifacts.provenance import (
    ChainLink,
    derived_from,
    describe,
    provenance_chain,
    require_derived_from,
    shared_rows,
)

__all__ = [
    "KINDS",
    "RESERVED_ATTRS",
    "SCHEMA_VERSION",
    "Artifact",
    "ChainLink",
    "FeatureRecipe",
    "InputRef",
    "Provenance",
    "Split",
    "content_hash",
    "derived_from",
    "describe",
    "embeddings_artifact",
    "parse_ref",
    "provenance_chain",
    "read",
    "read_provenance",
    "read_split",
    "require_derived_from",
    "shared_rows",
    "write",
]
