"""Ranking candidate public datasets by GSD to the private split, with the private subspace released under DP
or not (then the output says that the private split's features were used, never its labels)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pillar_cli.artifacts import FeatureRecipe, Split
from pillar_cli.errors import PrivacyError, UsageError, param
from pillar_cli.gsd.distance import GSDPlan, GSDSettings, plan_gsd
from pillar_cli.gsd.probes import LinearProbe, ProbeSpec
from pillar_cli.gsd.releases import DPSettings
from pillar_cli.gsd.subspace import TOLERANCE as SUBSPACE_TOLERANCE
from pillar_cli.privacy import validate_budget

PRIVACY_NOTE = "non-private: uses the private split's features (not its labels; labels are random)"
ILL_DEFINED_GAP = 1.05  # σ_k / σ_{k+1} below this: the top-k subspace moves with any perturbation


@dataclass(frozen=True)
class Ranking:
    distances: list[float]  # per candidate, in the order given
    rows: list[dict]  # rank, candidate, gsd: closest first
    settings: dict
    ledger: dict | None  # the DP release's ledger, None without DP


@dataclass(frozen=True)
class GSDJob:
    plan: GSDPlan
    names: list[str]
    description: str
    settings: GSDSettings
    protected_split: str
    private_candidates: list[str]  # allowed explicitly

    def run(self, on_rows: Callable[[int], None] = lambda n: None) -> Ranking:
        result = self.plan.run(on_rows)
        distances, released = result.distances, result.released
        order = np.argsort(distances, kind="stable")
        rows = [{"rank": r + 1, "candidate": self.names[i], "gsd": distances[i]} for r, i in enumerate(order)]
        subspaces = {name: subspace.record() for name, subspace in zip(self.names, result.candidates)}
        if result.private is not None:
            subspaces = {"private": result.private.record(), **subspaces}
        settings = {
            "k": self.settings.k,
            "max_samples": self.settings.max_samples,
            "seed": self.settings.seed,
            "probe": f"{self.description}, random labels",
            "privacy": PRIVACY_NOTE if released is None else released.summary,
            "normalize_rows": self.settings.normalize_rows,
            "subspaces": subspaces,
            "warnings": subspace_warnings(subspaces, self.settings.k),
        }
        if self.private_candidates:
            settings["privacy"] += "; PRIVATE splits among the candidates (allowed explicitly): " + ", ".join(
                self.private_candidates
            )
        ledger = (
            None
            if released is None
            else {
                **released.ledger,
                "protected_split": self.protected_split,
                "noise": self.settings.dp.noise.describe(),
            }
        )
        return Ranking(distances, rows, settings, ledger)


def subspace_warnings(subspaces: dict[str, dict], k: int) -> list[str]:
    """What makes a distance at this k fragile: a top-k subspace that is ill defined (σ_k ≈ σ_{k+1}), or a
    randomized one that did not settle."""
    warnings = []
    for name, record in subspaces.items():
        if record["gap"] < ILL_DEFINED_GAP:
            warnings.append(
                f"the top-{k} gradient subspace of {name} is ill defined (σ_{k}/σ_{k + 1} = "
                f"{record['gap']:.3f}): close candidates may reorder; compare at another k"
            )
        if record["tolerance"] is not None and record["tolerance"] > SUBSPACE_TOLERANCE:
            warnings.append(
                f"the randomized subspace of {name} is still an estimated {record['tolerance']:.2g} "
                f"from the exact one after {record['iterations']} iterations"
            )
    return warnings


def prepare(
    private: Split,
    candidates: list[Split],
    names: list[str],
    probe: ProbeSpec,
    *,
    k: int = 8,
    max_samples: int = 2000,
    seed: int = 0,
    dp: DPSettings | None = None,
    allow_private_labels: bool = False,
    normalize_rows: bool = False,
) -> GSDJob:
    """Check the request, build the probe at its fixed initial weights and size every gradient matrix. A
    private split is no public candidate: refused unless `allow_private_labels` (then stated in the
    settings)."""
    private_candidates = [name for name, split in zip(names, candidates) if split.name == "private"]
    if private_candidates and not allow_private_labels:
        raise PrivacyError(
            f"candidate {private_candidates[0]} is a private split, not public data",
            hint=f"name public candidates, or pass {param('allow_private_labels', True)} "
            "(recorded and printed)",
        )
    num_classes = private.num_classes
    if num_classes < 2:
        raise UsageError(
            f"{private.ref.path}:{private.name} declares {num_classes} classes; the probe needs at least two"
        )
    if dp is not None:
        if not np.isfinite(dp.epsilon):
            raise UsageError(
                f"{param('epsilon')} must be finite (got {dp.epsilon}); omit it for non-private GSD"
            )
        validate_budget(dp.epsilon, dp.delta, private.units.count, non_private_allowed=False)
    model = probe.build(private.features.shape[1], private.recipe, num_classes, seed)
    probed = [
        (c.features, model.for_dataset(c.features.shape[1], c.recipe, f"candidate {name}"))
        for c, name in zip(candidates, names)
    ]
    settings = GSDSettings(k, num_classes, seed, max_samples, dp, normalize_rows)
    return GSDJob(
        plan_gsd((private.features, model), probed, settings, private.units),
        names,
        model.description,
        settings,
        private.name,
        private_candidates,
    )


def gradient_subspace_distance(
    private: np.ndarray,
    public: np.ndarray,
    *,
    num_classes: int,
    k: int = 8,
    seed: int = 0,
    max_samples: int = 2000,
    dp: DPSettings | None = None,
    normalize_rows: bool = False,
    trainable_bias: bool = True,
) -> float:
    """GSD between two feature matrices under the linear softmax probe (fixed seeded weights, random labels):
    0 for the same gradient subspace, 1 for orthogonal ones. With `dp`, the private subspace is released with
    DP over all private rows. The same seed gives the same probe, so distances of several candidates
    compare."""
    if num_classes < 2:
        raise UsageError(f"{param('num_classes')} must be at least 2; got {num_classes}")
    if dp is not None:
        validate_budget(dp.epsilon, dp.delta, len(private), non_private_allowed=False)
    probe = LinearProbe(private.shape[1], num_classes, seed, trainable_bias)
    candidate = probe.for_dataset(public.shape[1], FeatureRecipe(), "the public rows")
    plan = plan_gsd(
        (np.asarray(private), probe),
        [(np.asarray(public), candidate)],
        GSDSettings(k, num_classes, seed, max_samples, dp, normalize_rows),
    )
    return plan.run().distances[0]
