"""The empirical component graph of boolean PUBLIC rows: the low-dimensional structure of the semi-private
disjunction learner (§3.1 of Hu, Pinto, Yang, Sanyal).

Variables i and j are joined when some public row has both active; the connected components partition the
variables that any public row activates. Variables no public row activates are one more group: the public data
says nothing about them, and keeping them together keeps the learner's candidates at 2^Z. Stored like a
projection (mean 0, scale 1, one indicator row per component), so every stage reads it as it reads a PCA;
fitted on the public split only, like the PCA.
"""

from __future__ import annotations

import numpy as np

from pillar_cli.artifacts import Artifact, Split
from pillar_cli.artifacts.projection_header import ProjectionHeader
from pillar_cli.errors import DataError
from pillar_cli.projection.pca import PublicPCA, require_unlabelled

METHOD = "components"


class PublicComponents(PublicPCA):
    """`components_` (Z, D): the 0/1 indicator of each component, largest first; `eigenvalues_`: their sizes;
    `unseen_`: whether the last row is the group of variables no public row activates."""

    def __init__(self):
        super().__init__(None, standardize=False)

    def fit(self, public: np.ndarray, y: None = None) -> PublicComponents:
        from scipy.sparse import csr_matrix
        from scipy.sparse.csgraph import connected_components

        if y is not None:
            raise DataError(
                "the component graph is fitted on unlabelled PUBLIC rows only; it was given labels"
            )
        check_boolean_rows(public, "the public split")
        n, dim = public.shape
        active = public.astype(bool)
        co_active = (active.T.astype(np.float32) @ active.astype(np.float32)) > 0
        _, labels = connected_components(csr_matrix(co_active), directed=False)
        seen = active.any(axis=0)
        groups = [np.flatnonzero((labels == label) & seen) for label in np.unique(labels[seen])]
        groups.sort(key=lambda members: (-len(members), members[0]))
        self.unseen_ = not seen.all()
        if self.unseen_:
            groups.append(np.flatnonzero(~seen))
        self.components_ = np.zeros((len(groups), dim))
        for row, members in enumerate(groups):
            self.components_[row, members] = 1.0
        self.eigenvalues_ = self.components_.sum(axis=1)
        self.mean_, self.scale_ = np.zeros(dim), np.ones(dim)
        # Boolean rows repeat across records, so equal rows do not reveal a shared record: no row digests are
        # kept (PublicPCA's check by value would refuse honest private rows); the stages check disjointness by
        # row id.
        self.rank_, self.n_public_, self.row_digests_ = len(groups), n, np.zeros(0, np.uint64)
        return self

    def groups(self) -> list[np.ndarray]:
        """The variables of each component, in stored order."""
        return [np.flatnonzero(row) for row in self.components_]

    def to_artifact(self) -> Artifact:
        artifact = super().to_artifact()
        artifact.attrs.update(
            method=METHOD,
            unseen_group=bool(self.unseen_),
            centred=False,
            eigenvalues="component sizes (variables per component), largest first",
        )
        return artifact

    @classmethod
    def from_artifact(cls, artifact: Artifact) -> PublicComponents:
        components = cls()
        components.mean_, components.scale_ = artifact.array("mean"), artifact.array("scale")
        components.components_, components.eigenvalues_ = (
            artifact.array("components"),
            artifact.array("eigenvalues"),
        )
        header = ProjectionHeader.of(artifact)
        components.rank_, components.n_public_, components.unseen_ = (
            header.rank,
            header.n_public,
            header.unseen_group,
        )
        components.row_digests_ = np.zeros(0, np.uint64)
        return components


def check_boolean_rows(features: np.ndarray, where: str) -> None:
    """Refuse any value other than 0 or 1, naming the first one."""
    bad = np.argwhere((features != 0) & (features != 1))
    if len(bad):
        row, column = bad[0]
        raise DataError(
            f"{where} holds non-boolean features (value {features[row, column]:g} at row {row}, column "
            f"{column}); the disjunction learners read 0/1 rows"
        )


def fit_public_components(split: Split) -> PublicComponents:
    """The component graph of an unlabelled (public) split."""
    require_unlabelled(split)
    return PublicComponents().fit(np.asarray(split.features))  # 0/1 rows, read whole


def read_projection(artifact: Artifact) -> PublicPCA:
    """A projection artifact as its fitted object: the component graph or a PCA."""
    if ProjectionHeader.of(artifact).method == METHOD:
        return PublicComponents.from_artifact(artifact)
    return PublicPCA.from_artifact(artifact)
