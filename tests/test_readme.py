"""The README's Python example runs as printed, and prints what the README says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_python_example_runs_and_prints_what_the_readme_says():
    text = README.read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, str(README), "exec"), {})
    lines = printed.getvalue().splitlines()
    claimed = re.search(r"It prints `(.*?)` and `(.*?)`", text.replace("\n", " "))
    spread = re.search(r"40 fits on [\d-]+: (0\.\d+) ± (0\.\d+) and (0\.\d+) ± (0\.\d+)", text.replace("\n", " "))
    measured = [(float(spread[1]), float(spread[2])), (float(spread[3]), float(spread[4]))]
    accuracy = re.compile(r"(accuracy |features: )(0\.\d+)")
    # the secret noise moves the accuracies, and the released row count ñ moves ε's last digits, σ and q = 256/ñ
    noisy = re.compile(r"(accuracy |features: |ε spent |σ = |q = |ñ = )([\d.]+)")
    for line, promised, (mean, std) in zip(lines, claimed.groups(), measured, strict=True):
        assert noisy.sub(r"\1…", line) == noisy.sub(r"\1…", promised)
        assert float(accuracy.search(promised)[2]) == mean  # the README quotes the mean of the fits it measured
        assert abs(float(accuracy.search(line)[2]) - mean) < 5 * std, line  # a fit within 5 std of that mean
    values = {name.strip(" =:"): float(value) for name, value in noisy.findall(lines[0])}
    assert 0.99 <= values["ε spent"] <= 1.0 and abs(values["ñ"] - 1100) < 5 * 14.2
    assert values["q"] == pytest.approx(256 / values["ñ"], abs=1e-3)
