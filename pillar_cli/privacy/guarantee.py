"""The guarantee of a plan's runs as one record: the neighbouring relation, the privacy unit, the row count
the runs read, the accountant and the runs' δ, and the upstream DP releases they rest on (a DP-PCA of the
private rows, the DP-GSD that chose the public data).

The plan builds it once (methods/plan.py); the model file stores it as one attribute, `guarantee`; a release's
statement copies it for the head it releases (`for_head`), and the Python API's `ledger_` is that statement's.
Two mechanisms meet only through it: every run's tree composes the count it read and every upstream release
(`compose`), its noise is calibrated for that whole composition (`noise`), so that a target ε or a risk target
covers everything the head rests on, and a composition it cannot account — a release per row under a person
unit, a relation the accountants do not account — is refused when the guarantee is made.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol

from pillar_cli.errors import PrivacyError, param
from pillar_cli.privacy.accountants import get_accountant, spent_epsilon
from pillar_cli.privacy.basis import ChosenBy, StatementBasis
from pillar_cli.privacy.calibration import calibrate_noise
from pillar_cli.privacy.count import DELTA_RULE, RowCount
from pillar_cli.privacy.events import (
    ComposedEvent,
    Event,
    ExponentialEvent,
    Segment,
    composed,
    gaussian_segments,
    is_private,
)
from pillar_cli.privacy.relation import ACCOUNTED, Relation
from pillar_cli.privacy.release import DPRelease, Released
from pillar_cli.privacy.unit import PrivacyUnit

# said by every statement: the guarantee is proved for real-valued noise (docs/privacy.md, "Not addressed")
FLOATING_POINT = (
    "attacks on the noise's floating-point representation: it is drawn by torch's and numpy's "
    "float32/float64 Gaussian samplers, not a discrete or secure-mode sampler (Mironov 2012)"
)
FINER_UNIT = {  # a release per row under heads that protect a person: how to make it protect one
    Released.PROJECTION: "refit the DP-PCA on the embeddings that name the persons",
    Released.PUBLIC_CHOICE: "rank the candidates again with gsd --dp-eps on the embeddings that name the "
    "persons (a DP-GSD then bounds each person)",
}


class HasDelta(Protocol):
    @property
    def delta(self) -> float: ...


def total_delta(delta: float, releases: Iterable[HasDelta]) -> float:
    """δ of a release at `delta` composed with others (DP releases, a file's heads): the one place δs are
    summed."""
    return float(delta) + sum(release.delta for release in releases)


@dataclass(frozen=True, kw_only=True)
class Guarantee:
    """What every run of a plan is a guarantee of: `unit` and `relation` (what neighbouring datasets differ
    by), the row count the runs' rates and rules read (released with noise inside ε, or public; None: a head
    that read none), the accountant and the runs' δ, and the `upstream` releases composed into every run at
    δ_total."""

    unit: PrivacyUnit
    count: RowCount | None
    accountant: str
    delta: float
    upstream: tuple[DPRelease, ...] = ()
    relation: Relation = ACCOUNTED
    delta_by_count: bool = (
        False  # δ was left to the default, read off the released count (count.default_delta)
    )

    def __post_init__(self) -> None:
        if self.relation != ACCOUNTED:
            raise PrivacyError(
                f"pillar's accountants account {ACCOUNTED.value} adjacency only: a guarantee under "
                f"{self.relation.value} adjacency is not one they can state"
            )
        for release in self.upstream:
            if self.unit.is_person and not release.unit.is_person:
                raise PrivacyError(
                    f"the {release.released}'s DP release protects one row, and these rows name their "
                    "persons: heads protecting a person cannot rest on it",
                    hint=f"{FINER_UNIT[release.released]}, or pass {param('privacy_unit')} row",
                )

    @property
    def delta_total(self) -> float:
        """The δ every composed run is a guarantee at: the runs' δ and each upstream release's."""
        return total_delta(self.delta, self.upstream)

    @property
    def private(self) -> bool:
        """Whether every upstream release is differentially private (one with ε = inf leaves no guarantee)."""
        return all(is_private(release.event) for release in self.upstream)

    def release(self, released: Released) -> DPRelease | None:
        """The upstream release of that kind, if the runs rest on one."""
        return next((release for release in self.upstream if release.released == released), None)

    def for_head(self, reads_count: bool) -> Guarantee:
        """This guarantee as one head's: with the count where the head read a released one (noisy, or declared
        public), without it otherwise (an exact count read by no mechanism is never stated)."""
        count = self.count if reads_count and self.count is not None and self.count.released else None
        return replace(self, count=count)

    def compose(self, event: Event) -> Event:
        """A head's tree with what it rests on: the noisy count it read first, then its own mechanisms, then
        every upstream release."""
        count = self.count if self.count is not None and self.count.noisy else None
        head = event if count is None else count.with_count(event)
        return composed(head, *(release.event for release in self.upstream))

    def own(self, tree: Event) -> Event:
        """A tree `compose` made, less what the head rests on: the head's own mechanisms."""
        parts = list(tree.events) if isinstance(tree, ComposedEvent) else [tree]
        upstream = [release.event for release in self.upstream]
        if upstream and parts[-len(upstream) :] == upstream:
            parts = parts[: -len(upstream)]
        if self.count is not None and self.count.noisy and parts[:1] == [self.count.event]:
            parts = parts[1:]
        return composed(*parts)

    def epsilon(self, tree: Event) -> float:
        """ε of a composed tree at δ_total, by the accountant (a pure-ε release adds its ε; a selection
        composes by its Rényi DP curve: privacy/accountants.py)."""
        return spent_epsilon(self.accountant, tree, self.delta_total)

    def fixed(self) -> tuple[tuple[Segment, ...], float]:
        """What a head's noise is calibrated together with: the Gaussian segments of the count and of every
        private upstream Gaussian release, and the summed ε of the pure-ε ones (the Bingham exponential
        mechanism)."""
        count = self.count.segments if self.count is not None else ()
        gaussian = tuple(
            segment
            for release in self.upstream
            if is_private(release.event) and not isinstance(release.event, ExponentialEvent)
            for segment in gaussian_segments(release.event) or ()
        )
        pure = sum(
            release.event.epsilon for release in self.upstream if isinstance(release.event, ExponentialEvent)
        )
        return count + gaussian, pure

    def spent_before(self) -> float:
        """ε at δ_total of what a head rests on, alone: the count it read and the upstream releases."""
        fixed, pure = self.fixed()
        return pure + (get_accountant(self.accountant).epsilon(fixed, self.delta_total) if fixed else 0.0)

    def own_budget(self, epsilon: float) -> float:
        """What a head's own pure-ε mechanism may spend for the whole tree to spend `epsilon`; refused in one
        line where the upstream releases leave nothing."""
        left = epsilon - self.spent_before()
        if self.upstream and left <= 0:
            rested = "; ".join(release.words for release in self.upstream)
            raise PrivacyError(
                f"the releases these heads rest on already spend ε = {epsilon - left:.4g} at δ = "
                f"{self.delta_total:g} ({rested}): no head fits within ε = {epsilon:g}",
                hint=f"give a larger {param('epsilon')} (it covers the releases too), or spend less on them",
            )
        return left

    def noise(self, epsilon: float, sample_rate: float, steps: int) -> float:
        """σ of `steps` Poisson-sampled Gaussian steps whose composition with everything this guarantee holds
        (the count, the upstream releases) spends at most `epsilon` at δ_total: a target is met by the whole
        tree."""
        fixed, pure = self.fixed()
        if self.upstream:
            self.own_budget(epsilon)  # refuses where the releases leave nothing
        return calibrate_noise(
            self.accountant, epsilon - pure, self.delta_total, sample_rate, steps, fixed=fixed
        )

    def words(self, basis: StatementBasis) -> tuple[list[str], list[str], list[str]]:
        """(covers, not_covered, rests_on) of a released head trained as `basis` records, under this
        guarantee: the one place a statement's words are made, on release and again on every read
        (artifacts/statement.py)."""
        count, covers, not_covered = self.count, [basis.trained], []
        if projection := self.release(Released.PROJECTION):  # a DP-PCA fitted on the private rows
            covers.append(f"fitting the projection on the private rows ({projection.words}, composed in)")
        elif basis.own_public:
            not_covered.append(
                f"{basis.own_public:,} records of your own source were used without protection as "
                "public data: the projection was fitted on them"
            )
        else:
            not_covered.append("the public data the projection was fitted on (public: not protected)")
        if count is not None:
            (covers if count.noisy else not_covered).append(count.describe())
        if basis.rule:
            reads = (
                "the released count ñ and ε"
                if count is not None and count.noisy
                else "the declared-public n and ε"
            )
            covers.append(
                f"choosing its {', '.join(basis.rule[0])}: a rule fixed in advance that reads no label, "
                f"only {reads} ({basis.rule[1]})"
            )
        if self.delta_by_count and count is not None and count.noisy:
            covers.append(
                f"choosing δ = {self.delta:.3g}: the default, {DELTA_RULE}, read off the released count ñ"
            )
        if basis.selected == ChosenBy.ACCOUNTED:
            covers.append(
                "choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
                "private val split"
            )
        elif basis.selected == ChosenBy.VAL:
            not_covered.append(
                "choosing its hyper-parameters on the private val split's labels (the paper's protocol)"
            )
        elif basis.selected == ChosenBy.SEARCH:
            not_covered.append(
                "keeping or scoring this fit by its score on private labels (it was fitted by scikit-learn's "
                "model selection: a search or cross-validation)"
            )
        if basis.cells > 1:
            not_covered.append(
                f"choosing this cell among the model's {basis.cells} (method, k, ε) cells, where that "
                "choice looked at val or test accuracies"
            )
        if choice := self.release(Released.PUBLIC_CHOICE):
            covers.append(f"choosing the public data: a DP-GSD release ({choice.words}, composed in)")
        elif basis.public_choice is not None:  # chosen with non-private access, allowed explicitly
            not_covered.append(basis.public_choice)
        premises = basis.premises  # None: a statement written before premises were recorded, nothing of them
        not_covered += [] if premises is None else premises.not_covered()
        return covers, [*not_covered, FLOATING_POINT], [] if premises is None else premises.rests_on()

    def to_attrs(self) -> dict:
        return {
            "relation": self.relation.name,
            "unit": self.unit.to_attrs(),
            "accountant": self.accountant,
            "delta": self.delta,
            "delta_total": self.delta_total,
            "count": None if self.count is None else self.count.to_dict(),
            "upstream": [release.to_attrs() for release in self.upstream],
            **({"delta_by_count": True} if self.delta_by_count else {}),
        }

    @classmethod
    def from_attrs(cls, attrs: Mapping) -> Guarantee:
        """As a file stores it; a record pillar does not read (a relation or unit it does not know, a
        malformed count or release) is a ValueError, which the file's schema turns into one line."""
        if not isinstance(attrs, Mapping) or not isinstance(attrs.get("upstream"), list):
            raise ValueError("a guarantee is a record with its upstream releases")
        count = attrs.get("count")
        guarantee = cls(
            unit=PrivacyUnit.from_attrs(attrs["unit"]),
            accountant=str(attrs["accountant"]),
            count=None if count is None else RowCount.from_dict(count),
            delta=float(attrs["delta"]),
            upstream=tuple(DPRelease.from_attrs(release) for release in attrs["upstream"]),
            relation=Relation[attrs["relation"]],
            delta_by_count=attrs.get("delta_by_count") is True,
        )
        if not math.isclose(float(attrs["delta_total"]), guarantee.delta_total, rel_tol=1e-12):
            raise ValueError("a guarantee whose delta_total is not its δ and its releases' summed")
        return guarantee
