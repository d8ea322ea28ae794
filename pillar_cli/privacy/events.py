"""DP events as values: what a mechanism ran, as a frozen tree that any accountant can read later.

In the style of Google dp-accounting's `dp_event`: leaves are mechanisms (a Gaussian release with its noise
multiplier, 0 for a non-private one; an exponential mechanism with its ε), inner nodes say how they were
combined (Poisson subsampling, self-composition, composition, one trial of several chosen independently of the
data, repeat-and-select). A tree says nothing about δ: δ is what an accountant is asked at. Trees round-trip
through JSON (`to_dict` / `event_from_dict`), which is how artifacts store them, and convert to
dp-accounting's own events (`to_dp_accounting`), which is how the independent check recomputes ε.

Noise multipliers are relative to the L2 sensitivity (the clip norm for DP-SGD); add/remove-one adjacency
throughout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from pillar_cli.errors import UsageError


class Event:
    """One node of a DP event tree (every kind of node is a frozen dataclass)."""

    kind: ClassVar[str] = ""
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"type": self.kind}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, Event):
                value = value.to_dict()
            elif isinstance(value, tuple):
                value = [item.to_dict() for item in value]
            out[field.name] = value
        return out


@dataclass(frozen=True)
class GaussianEvent(Event):
    """The Gaussian mechanism: noise of standard deviation noise_multiplier × the L2 sensitivity (0:
    non-private)."""

    noise_multiplier: float
    kind = "gaussian"


@dataclass(frozen=True)
class ExponentialEvent(Event):
    """The exponential mechanism (McSherry & Talwar) at ε: pure ε-DP whatever it chooses among."""

    epsilon: float
    kind = "exponential"


@dataclass(frozen=True)
class PoissonSampledEvent(Event):
    """`event` run on a Poisson sample of the rows, each kept with probability sample_rate."""

    sample_rate: float
    event: Event
    kind = "poisson-sampled"


@dataclass(frozen=True)
class SelfComposedEvent(Event):
    """`event` run `count` times, each on the same rows with fresh randomness."""

    event: Event
    count: int
    kind = "self-composed"


@dataclass(frozen=True)
class ComposedEvent(Event):
    """Every one of `events`, each with its own randomness."""

    events: tuple[Event, ...]
    kind = "composed"


@dataclass(frozen=True)
class OneOfEvent(Event):
    """One of `events`, chosen independently of the data: at every Rényi order at most the largest of
    theirs."""

    events: tuple[Event, ...]
    kind = "one-of"


@dataclass(frozen=True)
class RepeatAndSelectEvent(Event):
    """`event` repeated a hidden random number of times (mean, shape η: 1 geometric, inf Poisson, else
    truncated negative binomial), releasing only the best (Papernot & Steinke, ICLR 2022)."""

    event: Event
    mean: float
    shape: float
    kind = "repeat-and-select"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (
        GaussianEvent,
        ExponentialEvent,
        PoissonSampledEvent,
        SelfComposedEvent,
        ComposedEvent,
        OneOfEvent,
        RepeatAndSelectEvent,
    )
}


def event_from_dict(record: dict) -> Event:
    """The tree `Event.to_dict` wrote."""
    record = dict(record)
    kind = record.pop("type", None)
    if kind not in EVENT_TYPES:
        raise UsageError(f"unknown DP event '{kind}' (known: {', '.join(EVENT_TYPES)})")
    values = {}
    for name, value in record.items():
        if isinstance(value, dict):
            value = event_from_dict(value)
        elif isinstance(value, list):
            value = tuple(event_from_dict(item) for item in value)
        values[name] = value
    return EVENT_TYPES[kind](**values)


def dp_sgd_event(noise_multiplier: float, sample_rate: float, steps: int) -> Event:
    """`steps` Poisson-subsampled Gaussian steps (a sample rate of 1: full batches; one step: a single
    release)."""
    event: Event = GaussianEvent(noise_multiplier)
    if sample_rate < 1:
        event = PoissonSampledEvent(sample_rate, event)
    return event if steps == 1 else SelfComposedEvent(event, steps)


def composed(*events: Event) -> Event:
    """The composition of `events`, nested compositions flattened; one event is itself."""
    flat: list[Event] = []
    for event in events:
        flat.extend(event.events if isinstance(event, ComposedEvent) else [event])
    return flat[0] if len(flat) == 1 else ComposedEvent(tuple(flat))


# (noise multiplier, sample rate, steps) of Poisson-subsampled Gaussian steps
Segment = tuple[float, float, int]


def gaussian_segments(event: Event) -> list[Segment] | None:
    """The tree as a list of Poisson-subsampled Gaussian segments, or None when it holds anything else."""
    if isinstance(event, GaussianEvent):
        return [(event.noise_multiplier, 1.0, 1)]
    if isinstance(event, PoissonSampledEvent) and isinstance(event.event, GaussianEvent):
        return [(event.event.noise_multiplier, event.sample_rate, 1)]
    if isinstance(event, SelfComposedEvent):
        inner = gaussian_segments(event.event)
        if inner is not None and len(inner) == 1:
            sigma, rate, steps = inner[0]
            return [(sigma, rate, steps * event.count)]
        return None if inner is None else inner * event.count
    if isinstance(event, ComposedEvent):
        parts = [gaussian_segments(part) for part in event.events]
        return (
            [segment for part in parts if part is not None for segment in part] if None not in parts else None
        )
    return None


def headline(event: Event) -> tuple[float, float]:
    """(noise multiplier, sample rate) of a tree that is one Poisson-subsampled Gaussian segment, for tables;
    NaN for any other tree (its event says what it is)."""
    segments = gaussian_segments(event)
    return segments[0][:2] if segments is not None and len(segments) == 1 else (math.nan, math.nan)


def pure_parts(event: Event) -> tuple[float, Event | None]:
    """(the summed ε of the exponential mechanisms composed at the top of the tree, the rest of it or
    None)."""
    parts = event.events if isinstance(event, ComposedEvent) else (event,)
    rest = [part for part in parts if not isinstance(part, ExponentialEvent)]
    pure = sum(part.epsilon for part in parts if isinstance(part, ExponentialEvent))
    return pure, composed(*rest) if rest else None


def is_private(event: Event) -> bool:
    """False when any part of the tree releases without a guarantee."""
    if isinstance(event, GaussianEvent):
        return event.noise_multiplier > 0
    if isinstance(event, ExponentialEvent):
        return math.isfinite(event.epsilon)
    if isinstance(event, (ComposedEvent, OneOfEvent)):
        return all(is_private(child) for child in event.events)
    if isinstance(event, (PoissonSampledEvent, SelfComposedEvent, RepeatAndSelectEvent)):
        return is_private(event.event)
    raise TypeError(f"not a DP event: {event!r}")


def to_dp_accounting(event: Event):
    """The same tree as dp-accounting's events, under add/remove-one adjacency. Two nodes have no counterpart
    there (UsageError): one-of, and the exponential mechanism (its dominating pair, binary randomised
    response, is defined for replace-one adjacency only); `pure_parts` splits the latter off a composition."""
    from dp_accounting import dp_event

    if isinstance(event, GaussianEvent):
        if event.noise_multiplier == 0:
            return dp_event.NonPrivateDpEvent()
        return dp_event.GaussianDpEvent(event.noise_multiplier)
    if isinstance(event, PoissonSampledEvent):
        return dp_event.PoissonSampledDpEvent(event.sample_rate, to_dp_accounting(event.event))
    if isinstance(event, SelfComposedEvent):
        return dp_event.SelfComposedDpEvent(to_dp_accounting(event.event), event.count)
    if isinstance(event, ComposedEvent):
        return dp_event.ComposedDpEvent([to_dp_accounting(part) for part in event.events])
    if isinstance(event, RepeatAndSelectEvent):
        return dp_event.RepeatAndSelectDpEvent(to_dp_accounting(event.event), event.mean, event.shape)
    raise UsageError(f"dp-accounting has no event for '{event.kind}'")
