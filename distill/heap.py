"""Keeps a long CPU training run's resident memory flat: glibc's heap trimmed after each step.

On a CPU every activation buffer comes from ``malloc``. Tuples of different lengths free and
reallocate buffers of different sizes, and glibc keeps freed heap memory mapped: its mmap
threshold rises with the first large frees (to 32 MB), so most activations then live in the
heap, whose free chunks fragment. A 60-step run of the 0.5B on every layer grew from 15 GB after
its first step to 24 GB at step 45 and was killed for memory (docs/distillation.md).
``malloc_trim(0)`` hands every whole free page of every arena back to the kernel; called once a
step (and once per evaluation batch) it should cost little against a step of a minute (the
callback counts its calls and seconds), where fixing the threshold low
(``MALLOC_MMAP_THRESHOLD_``) made every step 1.65x slower. ``trim_heap: false`` in the config
turns it off.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

log = logging.getLogger("distill.train")
Trim = Callable[[], int]


def glibc_malloc_trim() -> Trim | None:
    """glibc's ``malloc_trim(0)`` as a function, or None where the C library has none (musl,
    macOS) or cannot be loaded."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return lambda: int(trim(0))


def resident_mb(statm: Path = Path("/proc/self/statm")) -> float | None:
    """This process's resident memory in MB (Linux), or None where it cannot be read."""
    try:
        pages = int(statm.read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return round(pages * os.sysconf("SC_PAGE_SIZE") / 1e6, 1)


class HeapTrimCallback(TrainerCallback):
    """Trims the heap after each optimizer step and each evaluation batch."""

    def __init__(self, trim: Trim) -> None:
        self.trim = trim
        self.calls = 0
        self.seconds = 0.0

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._trim()

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self._trim()

    def _trim(self) -> None:
        started = time.perf_counter()
        self.trim()
        self.seconds += time.perf_counter() - started
        self.calls += 1


def heap_trim_callback(
    device: str, enabled: bool, trim: Trim | None = None
) -> HeapTrimCallback | None:
    """The callback for a run on ``device``: on a CPU when ``enabled`` and the C library can
    trim (``trim`` defaults to glibc's), else None (a GPU's activations are not on the heap)."""
    if device != "cpu" or not enabled:
        return None
    trim = trim or glibc_malloc_trim()
    if trim is None:
        log.info("the C library has no malloc_trim: the heap is not trimmed between steps")
        return None
    return HeapTrimCallback(trim)
