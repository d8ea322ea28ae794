"""Hub weights on a machine without network: refused in a moment, not after the hub client's retries (about a
minute and a screen of retry lines), and still read from the local cache where they were fetched before."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from urllib.parse import urlparse

HUB_ENDPOINT = "https://huggingface.co"
CONNECT_SECONDS = 3.0


def hub_host() -> str:
    """The host weights are fetched from (HF_ENDPOINT where set, as huggingface_hub reads it)."""
    return urlparse(os.environ.get("HF_ENDPOINT") or HUB_ENDPOINT).hostname or "huggingface.co"


def reachable(host: str, timeout: float = CONNECT_SECONDS) -> bool:
    """Whether a TCP connection to `host` on port 443 opens within `timeout` seconds (name resolution
    included)."""
    try:
        with socket.create_connection((host, 443), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def cache_only_when_offline(fetching: bool = True) -> Iterator[bool]:
    """Inside: huggingface_hub reads only its local cache when the hub cannot be reached. Yields whether it
    can. `fetching` False (random or packaged weights): the hub is not contacted at all."""
    if not fetching:
        yield True
        return
    from huggingface_hub import constants

    online = constants.HF_HUB_OFFLINE is False and reachable(hub_host())
    was = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = was or not online  # read at call time by every download (is_offline_mode)
    try:
        yield online
    finally:
        constants.HF_HUB_OFFLINE = was
