"""Python's cyclic garbage collector paused while a run builds what it keeps until it ends.

Reading and analysis allocate millions of objects that live until the report is written (events,
timelines, findings) and make no reference cycles (one group of 10,000 rebalances and a 500 MB
corpus both left 401 objects for ``gc.collect()`` at the end, all from start-up): each full pass
of the collector walks every one of them again and frees nothing. Those passes were a fifth to a
quarter of the analysis's CPU time (docs/performance.md). Reference counting still frees every
temporary as soon as it is dropped; the collector is switched back on when the block ends.
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """The collector off within the block (left as it was found: blocks nest)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
