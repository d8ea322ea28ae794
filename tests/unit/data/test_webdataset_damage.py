"""Damaged WebDataset shards, written here with tarfile: a key given twice, a shard cut inside a member and
one cut at a member's end are each refused in one line (they used to drop samples or embed a short shard
silently)."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest
from PIL import Image

from pillar_cli.data.webdataset import read_webdataset
from pillar_cli.errors import DataError


def _png(value: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((4, 4, 3), value, np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def write_shard(path, members: list[tuple[str, bytes]]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def samples(count: int) -> list[tuple[str, bytes]]:
    return [
        member
        for i in range(count)
        for member in ((f"s{i}.png", _png(i)), (f"s{i}.cls", str(i % 2).encode()))
    ]


def test_a_well_formed_shard_reads_every_sample(tmp_path):
    write_shard(tmp_path / "train-0.tar", samples(6))
    dataset = read_webdataset(tmp_path, None)
    assert len(dataset.inputs) == 6 and list(dataset.labels) == [0, 1, 0, 1, 0, 1]


def test_a_key_given_twice_is_refused(tmp_path):
    write_shard(tmp_path / "train-0.tar", [*samples(3), ("s1.png", _png(9)), ("s1.cls", b"0")])
    with pytest.raises(
        DataError,
        match=rf"^sample 's1' of {tmp_path / 'train-0.tar'} has two .png members: a "
        "WebDataset key names one sample$",
    ):
        read_webdataset(tmp_path, None)


def test_a_shard_cut_inside_a_member_or_at_its_end_is_refused(tmp_path):
    shard = tmp_path / "train-0.tar"
    write_shard(shard, samples(4))
    whole = shard.read_bytes()
    with tarfile.open(shard) as tar:
        *_, image, last = tar.getmembers()
    shard.write_bytes(whole[: image.offset_data + 10])  # inside the last image, its label's header lost
    with pytest.raises(
        DataError, match=rf"^{shard} is cut short: member s3.png needs {image.size} bytes at offset "
    ):
        read_webdataset(tmp_path, None)
    shard.write_bytes(whole[: last.offset_data + 1])  # inside the last member, which tarfile notices itself
    with pytest.raises(DataError, match=rf"^cannot read the tar shard {shard}: unexpected end of data$"):
        read_webdataset(tmp_path, None)
    # at the end of the last member: no end-of-archive blocks
    shard.write_bytes(whole[: last.offset_data + 512])
    with pytest.raises(
        DataError, match=rf"^{shard} ends without tar's end-of-archive blocks after its last member"
    ):
        read_webdataset(tmp_path, None)
