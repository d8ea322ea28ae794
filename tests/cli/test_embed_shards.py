"""Scale-out of embed: --shard i/n files merged with --merge, torchrun ranks merged by rank 0, and a Ray Data
pipeline on a local Ray instance."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image

from pillar_cli import artifacts

pytestmark = pytest.mark.slow  # end-to-end runs of the pillar command


def content_hash(path) -> str:
    with h5py.File(path, "r") as h5:
        return h5.attrs["content_hash"]


def assert_same_embedding(single: Path, scaled_out: Path) -> None:
    """The same arrays (splits, row ids, labels) as one process, features within float tolerance."""
    one, other = artifacts.read(single, "embeddings"), artifacts.read(scaled_out, "embeddings")
    assert set(one.arrays) == set(other.arrays)
    for name, array in one.arrays.items():
        if name.endswith("/features"):  # CPU convolutions may round differently for other batch compositions
            np.testing.assert_allclose(other.arrays[name], array, rtol=1e-4, atol=1e-5)
        else:
            np.testing.assert_array_equal(other.arrays[name], array)


def test_merged_shards_equal_the_unsharded_artifact(pillar, tmp_path):
    pillar("embed", "--source", "digits", "-o", tmp_path / "full.h5")
    for i in range(3):
        pillar("embed", "--source", "digits", "--shard", f"{i}/3", "-o", tmp_path / f"part{i}.h5")
    shard = artifacts.read(tmp_path / "part1.h5", "embedding-shard")
    # shard 1 of 3: positions 1, 4, …
    test_rows = len(artifacts.read_split(f"{tmp_path / 'full.h5'}:test").index)
    np.testing.assert_array_equal(shard.array("splits/test/positions"), np.arange(1, test_rows, 3))
    parts = [tmp_path / f"part{i}.h5" for i in (2, 0, 1)]  # any order
    pillar("embed", "--merge", *parts, "-o", tmp_path / "merged.h5")
    assert content_hash(tmp_path / "merged.h5") == content_hash(tmp_path / "full.h5")
    merged = artifacts.read(tmp_path / "merged.h5", "embeddings")
    assert merged.provenance.command == [
        "pillar",
        "embed",
        "--merge",
        *map(str, parts),
        "--out",
        str(tmp_path / "merged.h5"),
    ]
    assert {ref.path for ref in merged.provenance.inputs} == set(map(str, parts))


def test_merge_refuses_incomplete_overlapping_or_foreign_shards(pillar, tmp_path):
    for i in range(2):
        pillar("embed", "--source", "digits", "--shard", f"{i}/2", "-o", tmp_path / f"p{i}.h5")
    pillar("embed", "--source", "digits", "--seed", "1", "--shard", "1/2", "-o", tmp_path / "other.h5")
    p0, p1, other = tmp_path / "p0.h5", tmp_path / "p1.h5", tmp_path / "other.h5"
    cases = [
        ([p0], "1 of 2 shards missing (e.g. shard 1/2)"),
        ([p0, p1, p0], "shards 0/2, 1/2, 0/2 overlap: each shard i/n must be given once"),
        ([p0, other], f"{other} was embedded with other options than {p0}; shards of one command only"),
    ]
    for files, message in cases:
        result = pillar("embed", "--merge", *files, "-o", tmp_path / "m.h5", expect=3)
        assert result.stderr == f"error: {message}\n"
    assert not (tmp_path / "m.h5").exists()
    result = pillar("fit-pca", f"{p0}:public", "-o", tmp_path / "pca.h5", expect=3)
    assert result.stderr.splitlines() == [
        f"error: {p0} is a embedding-shard artifact, expected embeddings",
        "hint: merge all shards first (embed's --merge)",
    ]


def test_torchrun_ranks_embed_their_shards_and_rank_zero_merges(pillar, tmp_path):
    args = [
        "embed",
        "--source",
        "digits",
        "--limit",
        "300",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "64",
    ]
    pillar(*args, "-o", tmp_path / "single.h5")
    launched = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            "-m",
            "pillar_cli",
            *args,
            "-o",
            str(tmp_path / "ranks.h5"),
        ],
        capture_output=True,
        text=True,
        env=os.environ | {"OMP_NUM_THREADS": "1"},
        timeout=300,
    )
    assert launched.returncode == 0, launched.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ranks.h5",
        "single.h5",
    ]  # rank files merged, removed
    assert_same_embedding(tmp_path / "single.h5", tmp_path / "ranks.h5")


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance of 2 CPUs that `embed --engine ray` finds started (as on a cluster's head
    node)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, logging_level="ERROR", log_to_driver=False, include_dashboard=False)
    yield ray
    ray.shutdown()


def test_a_ray_data_pipeline_embeds_every_row_once_as_one_process_does(pillar, tmp_path, local_ray):
    """The same splits, row ids and labels as one process, features within float tolerance (the pixel
    backbone: the same file content), every row once, nothing left beside the output."""
    pillar("embed", "--source", "digits", "-o", tmp_path / "pixels.h5")
    pillar(
        "embed", "--source", "digits", "--engine", "ray", "--actors", "1", "-o", tmp_path / "pixels-ray.h5"
    )
    assert content_hash(tmp_path / "pixels-ray.h5") == content_hash(tmp_path / "pixels.h5")
    args = [
        "embed",
        "--source",
        "digits",
        "--limit",
        "300",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "64",
    ]
    pillar(*args, "-o", tmp_path / "single.h5")
    result = pillar(*args, "--engine", "ray", "-o", tmp_path / "ray.h5")  # one actor, one CPU left to decode
    assert "ray.h5: digits embedded with resnet18" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pixels-ray.h5", "pixels.h5", "ray.h5", "single.h5"]
    assert_same_embedding(tmp_path / "single.h5", tmp_path / "ray.h5")
    assert artifacts.read(tmp_path / "ray.h5", "embeddings").provenance.config["engine"] == "ray"
    folder = tmp_path / "images"  # a file no worker can decode: one line, nothing written
    for i in range(30):
        (folder / "abc"[i % 3]).mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((8, 8, 3), 8 * i, np.uint8)).save(folder / "abc"[i % 3] / f"{i}.png")
    (folder / "b" / "4.png").write_bytes(b"not a png")
    failed = pillar(
        "embed",
        "--source",
        "image-folder",
        "--path",
        folder,
        "--engine",
        "ray",
        "-o",
        tmp_path / "f.h5",
        expect=4,
    )
    assert failed.stderr.startswith(f"error: cannot decode image {folder / 'b' / '4.png'}: ")
    assert "Traceback" not in failed.stderr and len(failed.stderr.splitlines()) <= 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "images",
        "pixels-ray.h5",
        "pixels.h5",
        "ray.h5",
        "single.h5",
    ]
    refused = pillar(*args, "--engine", "ray", "--actors", "2", "-o", tmp_path / "two.h5", expect=2)
    assert (
        refused.stderr == "error: --actors 2 leaves none of the cluster's 2 CPUs to decode images\n"
        "hint: pass at most --actors 1\n"
    )
    assert not (tmp_path / "two.h5").exists()


def backbone_actors() -> list[int]:
    """The process ids of this machine's Ray actors that hold a backbone (Ray titles them after the
    operator)."""
    pids = []
    for process in Path("/proc").iterdir():
        try:
            if process.name.isdigit() and b"MapBatches(Backbone)" in (process / "cmdline").read_bytes():
                pids.append(int(process.name))
        except OSError:  # the process ended meanwhile
            pass
    return pids


def test_a_backbone_actor_killed_mid_run_is_restarted_and_every_row_arrives_once(pillar, tmp_path, local_ray):
    """SIGKILL to the actor as the first features arrive: Ray restarts it and runs its tasks again; the
    artifact equals a one-process embed's."""
    from pillar_cli.embedding.job import EmbeddingJob
    from pillar_cli.embedding.ray_engine import embed_on_ray
    from pillar_cli.embedding.request import EmbedRequest

    request = EmbedRequest(source="digits", backbone="resnet18", pretrained=False, resize=32, crop=32)
    pillar(
        "embed",
        "--source",
        "digits",
        "--backbone",
        "resnet18",
        "--no-pretrained",
        "--resize",
        "32",
        "--crop",
        "32",
        "--batch-size",
        "64",
        "-o",
        tmp_path / "single.h5",
    )
    killed, heard = [], []

    def kill_at_first_batch(rows: int) -> None:
        if not killed:
            killed.extend(backbone_actors())
            for pid in killed:
                os.kill(pid, signal.SIGKILL)
        heard.append(rows)

    out = tmp_path / "ray.h5"
    embed_on_ray(
        request,
        EmbeddingJob.of(request.dataset(), request.plan),
        {},
        out,
        lambda artifact: artifacts.write(out, artifact),
        address=None,
        actors=1,
        device="cpu",
        batch_size=64,
        on_rows=kill_at_first_batch,
    )
    assert len(killed) == 1 and backbone_actors() and killed[0] not in backbone_actors()  # restarted
    assert sum(heard) == 1797 and len(heard) > 1
    assert_same_embedding(tmp_path / "single.h5", out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ray.h5", "single.h5"]


def test_ray_refuses_what_it_cannot_do_in_one_line(pillar, tmp_path):
    for extra, message in [
        (["--engine", "spark"], "--engine takes local or ray; got 'spark'"),
        (
            ["--engine", "ray", "--shard", "0/2"],
            "--engine ray embeds every row in one pipeline: "
            "without --shard, --resume, --skip-bad or torchrun",
        ),
    ]:
        result = pillar("embed", "--source", "digits", *extra, "-o", tmp_path / "e.h5", expect=2)
        assert result.stderr == f"error: {message}\n"
    assert not list(tmp_path.iterdir())
