"""Ctrl-C (or SIGTERM) during a stage: a clean message, exit 130, no partial or temporary artifact, existing
output intact."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import threading

import pytest

from pillar_cli.cli import fit_pca as fit_pca_command
from pillar_cli.cli.boundary import interrupt
from pillar_cli.projection import pca as projection_pca

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_training_leaves_no_artifact(mnist, tmp_path, signum):
    out = tmp_path / "model.h5"
    out.write_bytes(b"previous result")
    # 100,000 opacus steps take many minutes; the signal is sent once the run's first progress line says
    # DP-SGD has stepped. --force: the existing output may be replaced, but only by a finished artifact.
    command = [
        sys.executable,
        "-m",
        "pillar_cli",
        "train-private",
        str(mnist["emb"]),
        "-p",
        str(mnist["pca"]),
        "--engine",
        "opacus",
        "--k",
        "full",
        "--eps",
        "inf",
        "--steps",
        "100000",
        "-o",
        str(out),
        "--force",
    ]
    # SIGINT at its default even when the suite runs as a background job (which ignores it, and so would the
    # child)
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PILLAR_PROGRESS_SECONDS": "0.2"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    watchdog = threading.Timer(600, process.kill)  # a run that never steps must not hang the suite
    watchdog.start()
    try:
        before = list(
            itertools.takewhile(
                lambda line: not line.startswith("DP-SGD: "), iter(process.stderr.readline, "")
            )
        )
        assert process.poll() is None, "".join(
            before
        )  # stopped reading at a progress line: the run is training
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:  # a failed assertion must not leave a 100,000-step run eating a core for the rest of the suite
        watchdog.cancel()
        process.kill()
        process.wait()
    assert process.returncode == 130, stderr
    assert (
        stderr.strip().splitlines()[-1]
        == "error: interrupted; no artifact was written (existing files are unchanged)"
    )
    assert out.read_bytes() == b"previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.h5"]


def _dropping_interrupts(monkeypatch, module, name: str) -> None:
    """Make `module.name` receive a Ctrl-C that Python drops, as it does one arriving in a finaliser or in a
    lock a worker thread releases ("Exception ignored in ..."), then go on."""
    original = getattr(module, name)

    def dropped(*args, **kwargs):
        with contextlib.suppress(KeyboardInterrupt):
            interrupt(signal.SIGINT, None)
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, dropped)


def test_an_interrupt_python_dropped_stops_the_command_at_its_next_progress_step(
    mnist, pillar, tmp_path, monkeypatch
):
    monkeypatch.setattr(projection_pca.PublicPCA, "fit", _fit_dropping(projection_pca.PublicPCA.fit))
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "pca.h5", expect=130)
    assert result.stderr.strip().splitlines()[-1] == (
        "error: interrupted; no artifact was written (existing files are unchanged)"
    )
    assert list(tmp_path.iterdir()) == []


def _fit_dropping(fit):
    """PublicPCA.fit whose progress callback first receives a dropped interrupt."""

    def fitting(self, x, on_rows=lambda n: None, **kwargs):
        def on_rows_after_a_dropped_interrupt(n: int) -> None:
            with contextlib.suppress(KeyboardInterrupt):
                interrupt(signal.SIGINT, None)
            on_rows(n)

        return fit(self, x, on_rows=on_rows_after_a_dropped_interrupt, **kwargs)

    return fitting


def test_a_command_finishing_after_a_dropped_interrupt_is_undone_and_exits_130(
    mnist, pillar, tmp_path, monkeypatch
):
    """Its output was in place: it is taken back, so that exit 130 always means nothing was written."""
    _dropping_interrupts(monkeypatch, fit_pca_command, "_report")
    result = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "pca.h5", expect=130)
    assert result.stderr.strip().splitlines()[-1] == (
        "error: interrupted; no artifact was written (existing files are unchanged)"
    )
    assert list(tmp_path.iterdir()) == []


def test_quiet_keeps_stderr_to_warnings_and_errors(mnist, pillar, tmp_path, monkeypatch):
    monkeypatch.setenv("PILLAR_PROGRESS_SECONDS", "0")  # a progress line at every step
    loud = pillar("fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "loud.h5")
    assert "fit-pca: " in loud.stderr
    quiet = pillar("--quiet", "fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "quiet.h5")
    assert quiet.stderr == "" and quiet.stdout == loud.stdout.replace("loud.h5", "quiet.h5")
    refused = pillar("-q", "fit-pca", f"{mnist['emb']}:public", "-o", tmp_path / "quiet.h5", expect=2)
    assert refused.stderr.startswith("error: ") and "quiet.h5" in refused.stderr
