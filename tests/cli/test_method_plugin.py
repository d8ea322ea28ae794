"""A method added from outside the package: one module and one `pillar.methods` entry point make it a method
of train-private (its flag in --help), of sweeps and evaluations, of `inspect` and of both audits. And the
registry's rules: a name or flag taken twice is refused, a plugin that fails to load is skipped with one
warning."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pillar_cli.methods import catalog
from pillar_cli.methods.base import Method
from pillar_cli.methods.closed_form import PublicCovarianceLDA
from pillar_cli.methods.noisy_sgd import NoisySGD

pytestmark = pytest.mark.slow  # each command is a fresh interpreter, as a plugin's user runs it

CENTROIDS = '''
"""Noisy class centroids: one Gaussian release of the per-class sums of the unit-norm top-k rows."""

from dataclasses import dataclass

import numpy as np

from pillar_cli.linear.engine import LinearHead, RunConfig
from pillar_cli.methods.base import Method, Run, each_run, option
from pillar_cli.privacy import GaussianEvent


@dataclass(frozen=True)
class CentroidOptions:
    temperature: float = option(1.0, "scale of the centroid scores.")


class NoisyCentroids(Method):
    name = "centroids"
    family = "noisy centroids"
    description = "the nearest noisy class centroid of the unit-norm top-k rows"
    options = CentroidOptions
    normalises_rows = True
    mechanism_description = "one Gaussian release of the per-class sums of unit-norm rows, L2 sensitivity 1"

    def configs(self, *, seeds, **_):
        return [RunConfig.one_release(seed) for seed in seeds]

    def mechanism(self, config, n):
        return 1.0, 1

    def train_cell(self, cell):
        rows = self.features(cell.mapping, cell.data.private_x, cell.k)
        sums = np.zeros((cell.data.num_classes, rows.shape[1]))
        np.add.at(sums, cell.data.private_y, rows)
        sigma = cell.noise_multiplier(1.0, 1)
        event = GaussianEvent(sigma)

        def release(config):
            normal = cell.randomness.child("release", config).numpy().standard_normal
            noisy = sums + sigma * normal(sums.shape)
            head = LinearHead((cell.options.temperature * noisy.T).astype(np.float32),
                              np.zeros(len(sums), np.float32), 1)
            return Run(head=head, event=event, epsilon_spent=cell.spent_epsilon(event))

        return [each_run(cell, config, lambda config=config: release(config)) for config in cell.configs]


CENTROIDS = NoisyCentroids()
'''


def installed(root: Path, name: str, module: str, entry_points: dict[str, str]) -> Path:
    """A site directory holding `module` (source) and a distribution whose entry points name methods."""
    site = root / name
    (site / f"{name}-0.1.dist-info").mkdir(parents=True)
    (site / f"{name}.py").write_text(module)
    (site / f"{name}-0.1.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n"
    )
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (site / f"{name}-0.1.dist-info" / "entry_points.txt").write_text(f"[pillar.methods]\n{lines}")
    return site


def run_with(site: Path, *args: str | Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "pillar_cli", *map(str, args)],
        capture_output=True,
        text=True,
        env={**env, "COLUMNS": "200"},
        check=False,
    )


def succeeded(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_plugin_method_is_a_method_of_every_stage(mnist, tmp_path):
    site = installed(tmp_path, "toy_centroids", CENTROIDS, {"centroids": "toy_centroids:CENTROIDS"})
    helped = " ".join(succeeded(run_with(site, "train-private", "--help")).split())  # as read, not as wrapped
    assert "centroids (the nearest noisy class centroid" in helped and "--temperature" in helped
    assert "centroids" in succeeded(run_with(site, "audit", "canaries", "--train=--help"))
    model = tmp_path / "model.h5"
    succeeded(
        run_with(
            site,
            "train-private",
            mnist["emb"],
            "-p",
            mnist["pca"],
            "--method",
            "centroids",
            "--k",
            "20",
            "--eps",
            "1",
            "--seed",
            "0,1,2",
            "--temperature",
            "2",
            "-o",
            model,
        )
    )
    inspected = json.loads(succeeded(run_with(site, "inspect", model, "--json")))
    assert inspected["attrs"]["mechanisms"] == {  # its words, and the relation it declares (Method's default)
        "centroids": "one Gaussian release of the per-class sums of unit-norm rows, L2 sensitivity 1; "
        "add/remove-one adjacency"
    }
    checked = json.loads(succeeded(run_with(site, "audit", "ledger", model, "--json")))["runs"]
    assert [run["method"] for run in checked] == ["centroids"] * 3
    assert all(
        run["status"] == "ok" and abs(run["epsilon_recomputed"] / run["epsilon_claimed"] - 1) < 0.01
        for run in checked
    )
    rows = json.loads(succeeded(run_with(site, "evaluate", model, "-e", f"{mnist['emb']}:test", "--json")))[
        "rows"
    ]
    assert [row["method"] for row in rows] == ["centroids"] and rows[0]["accuracy_mean"] > 0.6  # chance: 0.1
    audited = json.loads(
        succeeded(
            run_with(
                site,
                "audit",
                "canaries",
                mnist["emb"],
                "-p",
                mnist["pca"],
                "--train",
                "--method centroids --k 20 --eps 1",
                "--canaries",
                "200",
                "--json",
            )
        )
    )
    assert audited["epsilon_lower_bound"] <= audited["epsilon_claimed"]


def test_a_broken_plugin_is_skipped_with_one_warning(tmp_path):
    site = installed(
        tmp_path,
        "toy_broken",
        "raise ImportError('needs a package this machine lacks')\n",
        {"broken": "toy_broken:METHOD"},
    )
    result = run_with(site, "train-private", "--help")
    assert result.returncode == 0 and "pillar (top-k principal components" in result.stdout
    assert result.stderr.splitlines() == [
        "warning: method plugin 'broken' (toy_broken:METHOD) not loaded: needs a package this machine lacks"
    ]


@pytest.mark.parametrize(
    ("method", "message"),
    [
        (PublicCovarianceLDA(), "a method named 'public-lda' is already registered"),
        (
            type("Margins", (NoisySGD,), {"name": "margins"})(),
            "method 'margins' declares option --zeta, which is already method 'noisy-sgd''s",
        ),
        (Method(), "is not a named pillar Method"),
    ],
)
def test_a_name_or_flag_is_registered_once(monkeypatch, method, message):
    monkeypatch.setattr(catalog, "METHODS", dict(catalog.METHODS))
    with pytest.raises(ValueError, match=re.escape(message)):
        catalog.register(method)
