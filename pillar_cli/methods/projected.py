"""DP-SGD on linear heads over a fixed map of the features: pillar (top-k public components), dpsgd (all
standardised features) and jl (a seeded Gaussian projection). Each configuration's noise multiplier is
calibrated for its exact sample rate and step count; its ε is recomputed from the event after training.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from pillar_cli.linear.engine import LinearHead, RunConfig, train_linear_heads
from pillar_cli.linear.opacus_reference import train_with_opacus
from pillar_cli.methods.base import Cannot, Cell, Method, Run
from pillar_cli.privacy import dp_sgd_event
from pillar_cli.privacy.unit import DP_SGD_PERSON_BOUND
from pillar_cli.projection import GaussianProjection, LinearMap, PublicPCA, project


class ProjectedDPSGD(Method):
    """DP-SGD on the linear map's first k dimensions (all standardised features when the method does not
    project)."""

    cannot: Mapping[Cannot, str] = MappingProxyType({})  # it bounds a person (DP_SGD_PERSON_BOUND)

    def __init__(
        self,
        name: str,
        family: str,
        description: str,
        projects: bool = True,
        single_cell: bool = False,
        needs_public_basis: bool | None = None,
        family_unprojected: str | None = None,
    ):
        self.name, self.family, self.description, self.projects = name, family, description, projects
        self.single_cell, self.family_unprojected = single_cell, family_unprojected
        self.needs_public_basis = projects if needs_public_basis is None else needs_public_basis
        # the fast engine's heads (a subclass with its own training loop says otherwise)
        self.averages_iterates = True
        self.person_bound = DP_SGD_PERSON_BOUND

    def train_cell(self, cell: Cell) -> list[Run]:
        rates = [cell.rows.sample_rate(c.batch_size) for c in cell.configs]
        sigmas = [cell.noise_multiplier(rate, c.steps) for c, rate in zip(cell.configs, rates)]
        # non-private cells clip too: the same SGD with σ = 0 (the rule's lr for them assumes it)
        heads = self.heads(cell, sigmas, cell.privacy.clip)
        events = [dp_sgd_event(sigma, rate, c.steps) for c, sigma, rate in zip(cell.configs, sigmas, rates)]
        return [
            Run(
                head=head,
                event=event,
                epsilon_spent=cell.spent_epsilon(event),
                batches=self.shared_batches(cell, c),
            )
            for c, head, event in zip(cell.configs, heads, events)
        ]

    def shared_batches(self, cell: Cell, config: RunConfig) -> tuple | None:
        """The fast engine draws one Poisson batch sequence per (seed, batch size) of a cell; opacus one per
        run."""
        return config.batches_label if cell.engine == "fast" else None

    def heads(self, cell: Cell, sigmas: list[float], clip: float | None) -> list[LinearHead]:
        data, projected = cell.data, cell.k if self.projects else None
        train_z = project(cell.mapping, data.private_x, projected)
        init = None
        if data.warm_start is not None:
            full_w, full_b = data.warm_start
            init = (
                full_w
                if projected is None
                else np.linalg.lstsq(cell.mapping.basis(projected), full_w, rcond=None)[0],
                full_b,
            )
        if cell.engine == "opacus":
            return [
                train_with_opacus(
                    train_z,
                    data.private_y,
                    data.num_classes,
                    c,
                    s,
                    clip,
                    init,
                    cell.randomness,
                    cell.rows,
                    cell.on_steps,
                )
                for c, s in zip(cell.configs, sigmas)
            ]
        return train_linear_heads(
            train_z,
            data.private_y,
            data.num_classes,
            cell.configs,
            sigmas,
            clip,
            device=cell.device,
            init=init,
            on_steps=cell.on_steps,
            noise=cell.randomness,
            count=cell.rows,
            units=cell.units,
        )


class RandomProjectionDPSGD(ProjectedDPSGD):
    cannot = MappingProxyType(
        {Cannot.BE_AUDITED: "its random projection would mix the canaries' coordinates into the features"}
    )

    def linear_map(self, pca: PublicPCA) -> LinearMap:
        return GaussianProjection(pca, seed=0)


PILLAR = ProjectedDPSGD(
    "pillar",
    "PILLAR",
    "top-k principal components of the PUBLIC features (the projection artifact)",
    family_unprojected="DP-SGD",
)  # at k = full it is DP-SGD on all features
DPSGD = ProjectedDPSGD(
    "dpsgd",
    "DP-SGD",
    "no projection: DP-SGD on all standardised features (the paper's main baseline)",
    projects=False,
    single_cell=True,
)
JL = RandomProjectionDPSGD(
    "jl", "JL", "Gaussian random projection to k dimensions (seeded; uses no data)", needs_public_basis=False
)
