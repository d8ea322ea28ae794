"""Ctrl-C (or SIGTERM) during a stage: a clean message, exit 130, no partial or temporary artifact, existing output
intact."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_training_leaves_no_artifact(mnist, tmp_path, signum):
    out = tmp_path / "model.h5"
    out.write_bytes(b"previous result")
    # 100,000 opacus steps take many minutes: the signal always lands mid-training. --force: the existing output may
    # be replaced, but only by a finished artifact.
    command = [sys.executable, "-m", "pillar_cli", "train-private", str(mnist["emb"]), "-p", str(mnist["pca"]),
               "--engine", "opacus", "--k", "full", "--eps", "inf", "--steps", "100000", "-o", str(out), "--force"]
    # SIGINT at its default even when the suite runs as a background job (which ignores it, and so would the child)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(12)
        assert process.poll() is None, process.communicate()
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=60)
    finally:  # a failed assertion must not leave a 100,000-step run eating a core for the rest of the suite
        process.kill()
        process.wait()
    assert process.returncode == 130, stderr
    assert stderr.strip().splitlines()[-1] == "error: interrupted; no artifact was written (existing files are unchanged)"
    assert out.read_bytes() == b"previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.h5"]
