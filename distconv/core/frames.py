"""zstd frames laid end to end in one buffer (the shard files, the device buffers nvCOMP reads):
each frame starts on a multiple of an alignment, zero bytes between."""

from __future__ import annotations


def aligned_up(n, align: int):
    """``n`` bytes (an int or an array of them) rounded up to a multiple of ``align``."""
    return -(-n // align) * align
