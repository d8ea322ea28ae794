"""How a DICOM file's values in its stored unit (the modality LUT's output: HU for CT) become grey levels in
[0, 1]: through an intensity window, as a viewer shows the scan, so that one anatomy reads alike whatever bit
depth, sign, rescale or photometric interpretation a scanner stored it with.

Three rules, spelled as `param window=…` and recorded in every file embedded from DICOM:

- `file` (the default): each file's own VOI window (its first WindowCenter/WindowWidth pair, through its
  VOILUTFunction: LINEAR, LINEAR_EXACT or SIGMOID, DICOM PS3.3 C.11.2.1.2); a file that records none is read
  by the `stored` rule, and embed says how many did;
- `C,W` or a CT preset by name (`lung`, `bone`, …): that window, linear, for every file;
- `stored`: the range the stored bit depth can hold, through the modality LUT, spread over [0, 1] (what
  files embedded before windows were recorded were read by).

MONOCHROME1 (white = low) is inverted after the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pillar_cli.errors import DataError, UsageError, param

# centre, width in HU: the windows radiology references list for CT
CT_PRESETS = {
    "brain": (40.0, 80.0),
    "soft-tissue": (40.0, 400.0),
    "mediastinum": (50.0, 350.0),
    "liver": (30.0, 150.0),
    "lung": (-600.0, 1500.0),
    "bone": (400.0, 1800.0),
}
FILE, STORED = "file", "stored"


@dataclass(frozen=True)
class Window:
    """A rule (`file`, `stored`) or a given centre and width."""

    rule: str = FILE
    centre: float | None = None
    width: float | None = None
    preset: str | None = None  # the CT preset the centre and width came from

    @classmethod
    def parse(cls, text: str | None) -> Window:
        """The window `param window=TEXT` names (None: the default, each file's own)."""
        text = (text or FILE).strip()
        if text in (FILE, STORED):
            return cls(text)
        if text in CT_PRESETS:
            return cls("given", *CT_PRESETS[text], preset=text)
        try:
            centre, width = (float(part) for part in text.split(","))
        except ValueError:
            raise UsageError(
                f"{param('params')} window={text}: give C,W (centre and width in the stored unit, HU for "
                f"CT), a CT preset ({', '.join(CT_PRESETS)}), '{FILE}' or '{STORED}'"
            ) from None
        if not (np.isfinite(centre) and np.isfinite(width) and width >= 1):
            raise UsageError(f"{param('params')} window={text}: the centre must be finite and the width ≥ 1")
        return cls("given", centre, width)

    @property
    def spelled(self) -> str:
        """As a recipe records it and `param window=` reads it back."""
        return self.rule if self.rule != "given" else f"{self.centre:g},{self.width:g}"

    @property
    def in_words(self) -> str:
        if self.rule == FILE:
            return "each file's own VOI window (the stored range where a file records none)"
        if self.rule == STORED:
            return "the range the stored bit depth holds"
        return f"centre {self.centre:g}, width {self.width:g}" + (f" ({self.preset})" if self.preset else "")

    def levels(self, values: np.ndarray, stored_range: tuple[float, float], dataset, name: str) -> np.ndarray:
        """Grey levels in [0, 1] of `values` in the stored unit; `stored_range` is what the stored bit depth
        holds, through the modality LUT (the fallback of the `file` rule)."""
        if self.rule == "given":
            if self.preset and str(getattr(dataset, "Modality", "CT") or "CT") != "CT":
                raise DataError(
                    f"{name} is {dataset.Modality}: window={self.preset} is a CT preset in HU",
                    hint=f"give {param('param')} window=C,W in its own unit",
                )
            return linear(values, self.centre, self.width)
        own = recorded_window(dataset, name) if self.rule == FILE else None
        if own is None:
            low, high = stored_range
            return np.clip((values - low) / max(high - low, 1e-12), 0, 1)
        centre, width, function = own
        if function == "SIGMOID":
            return 1 / (1 + np.exp(-4 * (values - centre) / width))
        if function == "LINEAR_EXACT":
            return np.clip((values - centre) / width + 0.5, 0, 1)
        return linear(values, centre, width)


def linear(values: np.ndarray, centre: float, width: float) -> np.ndarray:
    """DICOM's LINEAR VOI function onto [0, 1] (PS3.3 C.11.2.1.2.1): at or below c − ½ − (w − 1)/2 black,
    above c − ½ + (w − 1)/2 white."""
    if width == 1:
        return (values > centre - 0.5).astype(np.float64)
    return np.clip((values - (centre - 0.5)) / (width - 1) + 0.5, 0, 1)


def recorded_window(dataset, name: str) -> tuple[float, float, str] | None:
    """The file's first (centre, width, VOI LUT function); None where it records no window. A window that
    no function can use (width below 1, or not above 0 for LINEAR_EXACT and SIGMOID) is one line."""
    if "WindowCenter" not in dataset or "WindowWidth" not in dataset:
        return None
    centre, width = (_first(getattr(dataset, tag)) for tag in ("WindowCenter", "WindowWidth"))
    if centre is None or width is None:
        return None
    function = str(getattr(dataset, "VOILUTFunction", "LINEAR") or "LINEAR").upper()
    if function not in ("LINEAR", "LINEAR_EXACT", "SIGMOID"):
        raise DataError(
            f"{name} records VOILUTFunction {function}; LINEAR, LINEAR_EXACT and SIGMOID are read"
        )
    smallest = 1 if function == "LINEAR" else np.nextafter(0, 1)
    if not (np.isfinite(centre) and np.isfinite(width) and width >= smallest):
        raise DataError(
            f"{name} records the window centre {centre:g}, width {width:g}: no {function} window has it",
            hint=f"give {param('param')} window=C,W (or window={STORED})",
        )
    return centre, width, function


def _first(value) -> float | None:
    """A window tag's first value (a multi-valued tag lists alternatives; the first is the default)."""
    if value is None or value == "":
        return None
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        return float(value)
    values = list(value)
    return float(values[0]) if values else None
