"""Large buffers given back to the system when freed, so that a long run's resident memory follows what it
holds.

May import: nothing.
"""

from __future__ import annotations

import ctypes

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def return_large_buffers() -> None:
    """Serve buffers of 1 MiB and more (batches of images or features, blocks of rows, an accountant's FFTs)
    by mmap, returned to the system when freed. glibc otherwise raises its mmap threshold after the first
    large buffers are freed and later ones land on the heap, which then keeps their high-water mark (measured:
    +22 KB per image for 64-px pixel features in `embed`; about 100 MiB of train-private's peak on 72,000 ×
    2,048 features). No-op off glibc; DataLoader workers inherit it."""
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 20)
