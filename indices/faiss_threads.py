"""faiss searches on a chosen number of OpenMP threads, in whichever thread runs them.

OpenMP keeps ``omp_set_num_threads`` per thread, so setting it once where an index is built
does not reach the server's handler threads that search it. One thread is fastest for single
questions on small indices: more threads spin against torch's (MiniLM) and cost 8-16 ms per
search on 2 cores (``python -m perf.server_ask``).
"""

from __future__ import annotations

import faiss
import numpy as np


def search(
    index: faiss.Index, query: np.ndarray, k: int, threads: int | None = 1
) -> tuple[np.ndarray, np.ndarray]:
    """``index.search(query, k)`` with ``threads`` OpenMP threads (None: as they are)."""
    if threads is not None:
        faiss.omp_set_num_threads(threads)
    return index.search(query, k)
