"""The guarantee of a file that holds many heads: the ε of releasing all of them together.

A sweep's model file is a working file: it holds every head of its grid, each with its own ε. Anyone holding
the file holds all of them, so the file's guarantee is their composition, accounted for how they were drawn:

- Heads that shared their Poisson batches (the fast engine trains every configuration of one seed and batch
  size on one batch sequence, each head with its own noise) are one subsampled mechanism per step: the G
  clipped sums of a batch, each with noise σ_g·C, are one Gaussian mechanism of noise multiplier (Σ_g
  σ_g⁻²)^(-1/2), and the heads still running at a step are those with more steps. So a stream is a sequence of
  Poisson-subsampled Gaussian segments, one per distinct step count.
- Every other Gaussian head (its own batches) is its own event sequence. All of these compose at the file's δ
  under dp-accounting's PLD accountant (pessimistic discretisation) and its RDP accountant; the smaller of the
  two upper bounds is the file's ε. A file of one head has that head's own ε.
- The row count the heads read (privacy/count.py) was released once, and so was every upstream release they
  rest on (a DP-PCA, the DP-GSD that chose the public data): each joins the composition once, as it joins each
  run's tree.
- Heads whose ε is not one Gaussian event sequence (an accounted selection's released head, noisy-sgd's
  boosted runs, the exponential mechanism) add their own ε (which composes everything they rest on) by basic
  composition.
- A non-private head (ε = inf) leaves the file without any guarantee.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

from pillar_cli.privacy.accountants import RDP_ORDERS
from pillar_cli.privacy.events import (
    Event,
    Segment,
    composed,
    dp_sgd_event,
    gaussian_segments,
    is_private,
    pure_parts,
    to_dp_accounting,
)
from pillar_cli.privacy.guarantee import total_delta
from pillar_cli.privacy.relation import ACCOUNTED
from pillar_cli.randomness import NOT_PRIVATE_NOTE

WORKING_FILE_NOTE = "working file, not a release: every head of the grid, private row ids and counts"
VAL_SCORES_NOTE = "exact val accuracies (the val split's labels are outside every ε)"
NOISY_SCORES_NOTE = "noisy val scores (what the accounted selection released, inside ε; not accuracies)"


@dataclass(frozen=True)
class ReleasedHead:
    """One head of a file, as its guarantee sees it."""

    event: Event
    epsilon: float  # the head's own ε (its selection's for a selected head)
    batches: tuple | None = None  # heads with the same key drew their Poisson batches together
    joint: bool = True  # `event` is one Poisson-subsampled Gaussian segment; False: basic composition
    delta: float = 0.0  # the head's own δ, for basic composition


def whole_file(
    heads: list[ReleasedHead],
    delta: float,
    reproducible: bool,
    val_scores: bool = True,
    count: tuple[Segment, ...] = (),
    upstream: tuple[Event, ...] = (),
    noisy_scores: bool = False,
) -> dict:
    """The `whole_file` record of a model artifact: what it is (`val_scores`: it holds the heads' val
    accuracies, or with `noisy_scores` the accounted selection's noisy scores), how many heads, their joint
    guarantee (`reproducible`: its noise can be regenerated from a recorded seed, so it has none; `delta`: the
    heads' guarantee's δ total; `count`: the released row count the heads read, as Gaussian segments;
    `upstream`: the events of the releases every head rests on)."""
    if reproducible:
        guarantee = {"epsilon": math.inf, "delta": delta, "composition": NOT_PRIVATE_NOTE}
    else:
        guarantee = joint_epsilon(heads, delta, count, upstream)
    together = "its one head" if len(heads) == 1 else f"all {len(heads)} heads"
    scores = NOISY_SCORES_NOTE if noisy_scores else VAL_SCORES_NOTE
    kind = f"{WORKING_FILE_NOTE}, {scores}" if val_scores else WORKING_FILE_NOTE
    statement = f"{kind}; {together} together: ε = {guarantee['epsilon']:.4g} at δ = {guarantee['delta']:g}"
    return {"kind": kind, "heads": len(heads), **guarantee, "statement": statement}


def joint_epsilon(
    heads: list[ReleasedHead], delta: float, count: tuple[Segment, ...] = (), upstream: tuple[Event, ...] = ()
) -> dict:
    """{"epsilon", "delta", "composition"} of releasing every head together, the heads' streams accounted at
    `delta` (their guarantee's δ total); `count`: the row count's release and `upstream`: the releases the
    heads rest on, in each head's own ε already, composed once here."""
    if any(math.isinf(head.epsilon) or not is_private(head.event) for head in heads) or not all(
        is_private(event) for event in upstream
    ):
        return {
            "epsilon": math.inf,
            "delta": delta,
            "composition": "the file holds non-private heads (ε = inf): it has no guarantee as a whole",
        }
    basic = [head for head in heads if not head.joint]
    streams: dict[object, list[Segment]] = defaultdict(list)
    for index, head in enumerate(heads):
        if head.joint:
            segment = (gaussian_segments(head.event) or [])[0]  # a joint head is one segment
            streams[head.batches if head.batches is not None else ("own", index)].append(segment)
    joint = [head for head in heads if head.joint]
    at = delta if streams else 0.0
    if len(joint) == 1:
        epsilon = joint[0].epsilon
    elif streams:
        released = [dp_sgd_event(*segment) for segment in count]
        pure, rest = pure_parts(composed(*released, *upstream, streams_event(list(streams.values()))))
        epsilon = pure + (0.0 if rest is None else _tightest_epsilon(rest, at))
    else:
        epsilon = 0.0
    total = epsilon + sum(head.epsilon for head in basic)
    return {
        "epsilon": total,
        "delta": total_delta(at, basic),
        "composition": f"{len(streams)} independent Gaussian stream(s) (heads sharing Poisson batches as one "
        f"Gaussian mechanism per step)"
        + (" and the row count's release" if count else "")
        + (f" and {len(upstream)} upstream release(s)" if upstream else "")
        + " composed by PLD and RDP (dp-accounting), the smaller bound"
        + (f", plus {len(basic)} head(s) by basic composition" if basic else ""),
    }


def stream_segments(heads: list[Segment]) -> list[Segment]:
    """(joint noise multiplier, sample rate, steps) per segment of one stream of heads (σ, q, T): heads active
    at a step are those with more steps; their sums form one Gaussian mechanism of noise multiplier (Σ
    σ⁻²)^(-1/2)."""
    segments, done = [], 0
    for steps in sorted({head[2] for head in heads}):
        active = [head for head in heads if head[2] >= steps]
        sigma = sum(head[0] ** -2 for head in active) ** -0.5
        segments.append((sigma, active[0][1], steps - done))
        done = steps
    return segments


def streams_event(streams: list[list[Segment]]) -> Event:
    """Every stream's segments, composed, as one event tree."""
    return composed(*(dp_sgd_event(*segment) for heads in streams for segment in stream_segments(heads)))


def _tightest_epsilon(event: Event, delta: float) -> float:
    """The smaller of dp-accounting's RDP and PLD (pessimistic) upper bounds for `event` at δ."""
    from dp_accounting import pld
    from dp_accounting.rdp import RdpAccountant

    def epsilon(accountant) -> float:
        accountant.compose(to_dp_accounting(event))
        return float(accountant.get_epsilon(delta))

    orders = RDP_ORDERS[RDP_ORDERS >= 2].tolist()
    rdp = epsilon(RdpAccountant(orders, ACCOUNTED.to_dp_accounting()))  # fractional orders below 2 fail to
    # converge at large q in dp-accounting's series, and are never the optimum for these budgets
    # A grid fine relative to ε keeps the pessimistic discretisation error near 0.1 % at seconds' cost.
    interval = min(1e-3, max(1e-5, 1e-4 * rdp))
    return min(
        rdp, epsilon(pld.PLDAccountant(ACCOUNTED.to_dp_accounting(), value_discretization_interval=interval))
    )
