"""The number of training rows, as every value derived from it reads it.

Under add/remove-one adjacency n itself is private: someone who knows every row but one reads from n whether
that row was in. So nothing a training run releases may be a function of the exact n. Every value derived from
it — a Poisson sampling rate B/n, the scale 1/(q·n) of an update, the default rule's k, lr and steps, the
check δ < 1/n, a closed-form head's class sizes, a fine-tuning sampler — reads a `RowCount` instead: the count
released once per training run by a Gaussian mechanism (sensitivity 1), drawn from secret randomness, whose
event composes into the ε of every head that reads it.

Its budget is fixed in advance: the count's Gaussian is COUNT_SHARE of the μ² of the μ-GDP budget that the
smallest private target (ε, δ) allows (under Gaussian DP, composition adds μ²), so σ = 1/(√share · μ(ε, δ));
the heads' own noise is then calibrated for their mechanism and the count together. The count changes nothing
of the guarantee but the budget it takes: a sampler at rate B/ñ is exactly Poisson sampling at that rate,
whatever n is.

The count is released once per dataset: the same rows (by a digest of their content) and the same noise scale
read the ñ drawn first, kept in the local cache (counts.json beside the calibrations; never in a file that is
shared), so that running again — a refused run above all — tells nothing new: averaging m fresh draws would
shrink the noise by √m. The default δ follows it (`default_delta`): 1e-5, or 0.1/ñ where that is smaller, so a
large dataset needs no flag.

A user whose n is public knowledge (a published cohort size) declares it (`declared_public`): the count is
then exact, costs nothing, and every statement says in words that the guarantee assumes n known.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from enum import Enum

from pillar_cli.errors import UsageError, param
from pillar_cli.privacy.cache import NumberCache
from pillar_cli.privacy.events import ComposedEvent, Event, GaussianEvent, Segment, composed
from pillar_cli.privacy.gaussian import gdp_mu
from pillar_cli.randomness import NoiseSource

COUNT_SHARE = 0.05  # of the smallest private target's μ² (docs/privacy.md: measured against 0.02 and 0.1)
DEFAULT_DELTA = 1e-5  # δ where none is given, or DELTA_SHARE/ñ where that is smaller
DELTA_SHARE = 0.1  # the default δ never exceeds this share of 1/ñ
DELTA_RULE = f"{DEFAULT_DELTA:g} or {DELTA_SHARE:g}/ñ, whichever is smaller"  # the default δ, in words
_forgetting: list[
    dict[str, float]
] = []  # while non-empty, counts are drawn into its last dict (independent_counts)


class CountKind(str, Enum):
    """How a count was made known; the value is what files store."""

    NOISY = "noisy"  # released once with Gaussian noise
    PUBLIC = "declared public"  # n known to everyone, read exactly
    EXACT = "exact"  # read by no private mechanism


NOISY, PUBLIC, EXACT = CountKind.NOISY, CountKind.PUBLIC, CountKind.EXACT


class Counted(str, Enum):
    """What a count counts: the units of privacy (privacy/guarantee.py); the value is what files store and
    sentences say."""

    ROWS = "training rows"
    PERSONS = "persons"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class RowCount:
    """The row count values derived from n read: `value` is ñ (at least 1) for a noisy count, n otherwise.

    `kind`: NOISY (a Gaussian release of σ = `noise_multiplier`, planned as `share` of the budget of
    `planned_for` = (ε, δ)), PUBLIC (n known to everyone: exact, and the statements say so) or EXACT (nothing
    private reads it: a non-private run, a method that derives nothing from n, a reference). `of`: what it
    counts (`Counted`): training rows, or persons where the person is the privacy unit
    (privacy/guarantee.py)."""

    value: float
    kind: CountKind = EXACT
    noise_multiplier: float = 0.0
    share: float = 0.0
    planned_for: tuple[float, float] | None = None
    of: Counted = Counted.ROWS

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", CountKind(self.kind))  # their stored text too
        object.__setattr__(self, "of", Counted(self.of))

    @classmethod
    def exact(cls, n: int, declared_public: bool = False, of: Counted = Counted.ROWS) -> RowCount:
        return cls(float(n), PUBLIC if declared_public else EXACT, of=of)

    @property
    def noisy(self) -> bool:
        return self.kind == NOISY

    @property
    def released(self) -> bool:
        """Whether values may state it: released with noise, or declared public (an exact count stays
        private)."""
        return self.kind != EXACT

    @property
    def event(self) -> Event | None:
        """The count's own DP event (None for an exact count)."""
        return GaussianEvent(self.noise_multiplier) if self.noisy else None

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The count as a Gaussian segment that a head's noise is calibrated together with (none if exact)."""
        return ((self.noise_multiplier, 1.0, 1),) if self.noisy else ()

    def with_count(self, event: Event) -> Event:
        """A head's event tree with the count's release composed in (unchanged for an exact count)."""
        return event if self.event is None else composed(self.event, event)

    def without_count(self, event: Event) -> Event:
        """A recorded event tree less the count's release (`with_count`'s inverse; unchanged without it)."""
        if self.noisy and isinstance(event, ComposedEvent) and event.events[0] == self.event:
            return composed(*event.events[1:])
        return event

    def sample_rate(self, batch_size: int) -> float:
        """Poisson sampling rate of an expected batch B: B/ñ, at most 1 (every row in every step)."""
        return min(1.0, batch_size / self.value)

    def expected_batch(self, batch_size: int) -> float:
        """The expected batch q·ñ that divides a step's noisy gradient sum (never a realised batch size or
        n)."""
        return self.sample_rate(batch_size) * self.value

    @property
    def all_rows(self) -> int:
        """The batch size of a full batch (sampling rate 1)."""
        return math.ceil(self.value)

    def describe(self) -> str:
        """In words, for statements and reports."""
        if self.noisy and self.planned_for is not None:
            epsilon, delta = self.planned_for
            return (
                f"the number of {self.of}, released once with Gaussian noise σ = {self.noise_multiplier:.4g} "
                f"(sensitivity 1; {self.share:g} of the μ² of the (ε = {epsilon:g}, δ = {delta:g}) budget), "
                f"ñ = {self.value:.1f}: every value derived from n reads ñ"
            )
        if self.kind == PUBLIC:
            return (
                f"the number of {self.of}, n = {self.value:.0f}, is declared public knowledge: values "
                "derived from it read it exactly, and the guarantee holds only against someone who knows n"
            )
        return f"the number of {self.of} is not read by any private mechanism"

    def to_dict(self) -> dict:
        return {
            **asdict(self),
            "kind": self.kind.value,
            "of": self.of.value,
            "planned_for": None if self.planned_for is None else list(self.planned_for),
            "note": self.describe(),
        }

    @classmethod
    def from_dict(cls, record: dict) -> RowCount:
        planned = record.get("planned_for")
        return cls(
            float(record["value"]),
            CountKind(record["kind"]),
            float(record["noise_multiplier"]),
            float(record["share"]),
            None if planned is None else (float(planned[0]), float(planned[1])),
            Counted(record.get("of", Counted.ROWS)),
        )


def readable_count(record: object) -> bool:
    """Whether a file's record of a count is one `RowCount.from_dict` reads (not a kind it does not know, no
    value missing): any other is refused with its file, never read as some other kind."""
    try:
        RowCount.from_dict(record)  # type: ignore[arg-type]  # a file's value, of any type: refused if not a record
    except (KeyError, TypeError, ValueError, AttributeError):
        return False
    return True


def count_noise(epsilon: float, delta: float, share: float = COUNT_SHARE) -> float:
    """σ of the count's Gaussian release: `share` of the μ² of the μ-GDP budget that (ε, δ) allows."""
    if not 0 < share < 1:
        raise UsageError(f"{param('count_share')} must be in (0, 1) (got {share})")
    return 1.0 / (math.sqrt(share) * gdp_mu(epsilon, delta))


def release_count(
    n: int,
    epsilon: float,
    delta: float,
    noise: NoiseSource,
    share: float = COUNT_SHARE,
    of: Counted = Counted.ROWS,
) -> RowCount:
    """ñ = max(1, n + σ·Z), Z drawn once from the secret source `noise`, σ planned for the budget (ε, δ)."""
    sigma = count_noise(epsilon, delta, share)
    value = n + sigma * float(noise.child("count").numpy().standard_normal())
    return RowCount(max(1.0, value), NOISY, sigma, share, (epsilon, delta), of)


def released_once(
    rows: str | None,
    n: int,
    epsilon: float,
    delta: float,
    noise: NoiseSource,
    share: float = COUNT_SHARE,
    of: Counted = Counted.ROWS,
) -> RowCount:
    """The count of the rows that `rows` names (a digest of their content), released once for that content and
    noise scale and reused by every later run; None names no rows: drawn afresh. Reproducible noise
    (experiments, NOT private) is drawn each time: its seed regenerates it anyway."""
    sigma = count_noise(epsilon, delta, share)
    if rows is None or noise.reproducible:
        return release_count(n, epsilon, delta, noise, share, of)
    key = hashlib.sha256(f"count-v1|{rows}|{of.value}|{sigma!r}".encode()).hexdigest()
    store = _forgetting[-1] if _forgetting else None
    value = store.get(key) if store is not None else NumberCache("counts.json").get(key)
    if value is None:
        value = release_count(n, epsilon, delta, noise, share, of).value
        if store is not None:
            store[key] = value
        else:
            NumberCache("counts.json").put(key, value)
    return RowCount(float(value), NOISY, sigma, share, (epsilon, delta), of)


@contextlib.contextmanager
def independent_counts() -> Iterator[None]:
    """Inside, every count is drawn afresh and forgotten on leaving: for a check that needs independent draws
    of the whole pipeline, as different data holders would make them (audit/neighbours.py)."""
    _forgetting.append({})
    try:
        yield
    finally:
        _forgetting.pop()


def count_for(
    n: int,
    epsilons: list[float],
    delta: float,
    noise: NoiseSource,
    declared_public: bool = False,
    share: float = COUNT_SHARE,
    preview: bool = False,
    of: Counted = Counted.ROWS,
    rows: str | None = None,
) -> RowCount:
    """The count a training run with these target ε reads: released once for the rows `rows` names (a digest
    of their content; None: drawn afresh), planned for the smallest finite ε; exact when n is declared public
    or no target is private (nothing private reads it). `preview`: NOT a release — the planned count with ñ =
    n, for printing a plan to the data holder only (a plan made with it never trains)."""
    private = [epsilon for epsilon in epsilons if math.isfinite(epsilon)]
    if declared_public or not private:
        return RowCount.exact(n, declared_public, of)
    if preview:
        epsilon = min(private)
        return RowCount(float(n), NOISY, count_noise(epsilon, delta, share), share, (epsilon, delta), of)
    return released_once(rows, n, min(private), delta, noise, share, of)


def default_delta(count: RowCount) -> float:
    """δ when none is given: DEFAULT_DELTA, or DELTA_SHARE/ñ where that is smaller, for a count released with
    noise or declared public; a count no mechanism released leaves DEFAULT_DELTA (a δ read off the exact n
    would tell it)."""
    return min(DEFAULT_DELTA, DELTA_SHARE / count.value) if count.released else DEFAULT_DELTA
