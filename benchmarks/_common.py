"""Helpers the benchmark scripts share (not part of the library; imported as a sibling)."""

from __future__ import annotations

import platform
import time
from collections.abc import Callable


def cpu_name() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def best_time(fn: Callable[[], object], repeats: int) -> tuple[float, object]:
    """(minimum wall time over ``repeats`` calls after one untimed warm-up call, the last
    call's result)."""
    fn()  # warm-up (compiles, fills caches)
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out
