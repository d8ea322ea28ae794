"""The guarantee's parts as values: the DP releases a run rests on, the composition of a run with them at the one δ
total, and a statement's words (the privacy unit and the neighbouring relation have modules of their own:
privacy/unit.py, privacy/relation.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pillar_cli.privacy.accountants import spent_epsilon
from pillar_cli.privacy.basis import ChosenBy, StatementBasis
from pillar_cli.privacy.count import RowCount
from pillar_cli.privacy.events import Event, composed, event_from_dict
from pillar_cli.privacy.unit import PrivacyUnit


@dataclass(frozen=True)
class DPRelease:
    """One DP release another composes with (the noisy count, a DP-PCA, a DP-GSD choice, a head of a file): its
    (ε, δ) and, where it is a tree pillar accounts, its event."""

    epsilon: float
    delta: float
    event: Event | None = None
    mechanism: str = ""
    unit: PrivacyUnit = field(default_factory=lambda: PrivacyUnit())  # what it protects (a row where not recorded)
    record: Mapping | None = field(default=None, compare=False, repr=False)  # as its mechanism wrote it: files keep it

    @classmethod
    def of(cls, record: Mapping) -> DPRelease:
        """From the record a file or a DP-PCA object holds (keys epsilon, delta, event, mechanism, unit)."""
        event = record.get("event")
        return cls(float(record.get("epsilon", 0.0)), float(record.get("delta", 0.0)),
                   None if event is None else event_from_dict(event), str(record.get("mechanism", "")),
                   PrivacyUnit.from_attrs(record.get("unit")), dict(record))


def total_delta(delta: float, releases: Iterable[DPRelease | Mapping]) -> float:
    """δ of a release at `delta` composed with others (DPRelease values or their records): the one place δs are
    summed."""
    return float(delta) + sum(release.delta if isinstance(release, DPRelease) else float(release.get("delta", 0.0))
                              for release in releases)  # a record's δ read alone: every file read sums them


@dataclass(frozen=True)
class Guarantee:
    """What every run of a plan is a guarantee of, built once by the plan: the privacy unit, the row count the runs'
    rates and rules read (released with noise inside ε, or public; None: a released head that read none), and the
    upstream DP releases they rest on (the records of a DP-PCA, of the DP-GSD that chose the public data) — composed
    into each run's tree at one δ total by the run's accountant. The command line, `sweep()` and the estimator
    compose through it alike; a release's statement takes its words from it."""

    unit: PrivacyUnit
    count: RowCount | None
    accountant: str
    delta: float
    upstream: tuple[DPRelease, ...] = ()

    @property
    def delta_total(self) -> float:
        """The δ every composed run is a guarantee at: the runs' δ and each upstream release's."""
        return total_delta(self.delta, self.upstream)

    def compose(self, event: Event, epsilon: float) -> tuple[Event, float]:
        """(a run's tree with the upstream releases, its ε at `delta_total`); the run as it is without any. The trees
        compose as one, by the run's accountant: a Gaussian release joins the run's Gaussian segments, a pure ε
        release (the Bingham exponential mechanism) adds its ε, a private selection composes by its Rényi DP curve."""
        if not self.upstream:
            return event, epsilon
        total = composed(event, *(release.event for release in self.upstream))
        return total, spent_epsilon(self.accountant, total, self.delta_total)

    def words(self, basis: StatementBasis) -> tuple[list[str], list[str], list[str]]:
        """(covers, not_covered, rests_on) of a released head trained as `basis` records, under this guarantee: the
        one place a statement's words are made, on release and again on every read (artifacts/statement.py)."""
        count, covers, not_covered = self.count, [basis.trained], []
        if projection := basis.projection:  # a DP-PCA fitted on the private rows
            covers.append(f"fitting the projection on the private rows ({projection.mechanism}; ε = "
                          f"{projection.epsilon:.4g}, δ = {projection.delta:g}, composed in)")
        else:
            not_covered.append("the public data the projection was fitted on (public: not protected)")
        if count is not None:
            (covers if count.noisy else not_covered).append(count.describe())
        if basis.rule:
            reads = "the released count ñ and ε" if count is not None and count.noisy else "the declared-public n and ε"
            covers.append(f"choosing its {', '.join(basis.rule[0])}: a rule fixed in advance that reads no label, "
                          f"only {reads} ({basis.rule[1]})")
        if basis.selected == ChosenBy.ACCOUNTED:
            covers.append("choosing its hyper-parameters: an accounted private selection (Papernot & Steinke) on the "
                          "private val split")
        elif basis.selected == ChosenBy.VAL:
            not_covered.append("choosing its hyper-parameters on the private val split's labels (the paper's protocol)")
        if basis.cells > 1:
            not_covered.append(f"choosing this cell among the model's {basis.cells} (method, k, ε) cells, where that "
                               "choice looked at val or test accuracies")
        if choice := basis.public_choice:
            (covers if choice.released else not_covered).append(
                f"choosing the public data: {choice.note}" if choice.released else choice.note)
        if not (premises := basis.premises):  # a statement written before premises were recorded: nothing of them
            return covers, not_covered, []
        return covers, not_covered + premises.not_covered(), premises.rests_on()


