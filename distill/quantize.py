"""Quantise an exported student's GGUF with llama.cpp's own quantiser.

The export writes F16 (or F32); a student served beside the packaged models should be
quantised as they are (the packaged 0.5B and 1.5B are Q4_K_M), or an evaluation compares a
16-bit student with a 4-bit base: a different model size, speed and accuracy. llama.cpp's
``llama_model_quantize`` ships in llama-cpp-python's library (no ``llama-quantize`` binary
needed); the output is written beside and renamed over, like the export's.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

# the llama.cpp file types offered (lower-case names, as llama-quantize spells them)
QUANT_TYPES = {
    "q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
    "q5_k_m": "LLAMA_FTYPE_MOSTLY_Q5_K_M",
    "q6_k": "LLAMA_FTYPE_MOSTLY_Q6_K",
    "q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0",
}


class QuantizeError(ValueError):
    """A GGUF that could not be quantised (names the file and the type)."""


def llama_file_type(kind: str) -> str:
    """The llama.cpp file type constant of ``kind`` (:class:`QuantizeError` if unknown)."""
    if kind not in QUANT_TYPES:
        raise QuantizeError(f"quantisation must be one of {sorted(QUANT_TYPES)}, not {kind!r}")
    return QUANT_TYPES[kind]


def quantize_gguf(source: Path, out_file: Path, kind: str, *, threads: int = 0) -> Path:
    """Quantise the GGUF ``source`` to ``kind`` (a key of :data:`QUANT_TYPES`) into
    ``out_file``; ``threads`` 0 lets llama.cpp choose. ``out_file`` is replaced only once
    the new file is complete."""
    file_type = llama_file_type(kind)
    if not source.is_file():
        raise QuantizeError(f"no GGUF to quantise at {source}")
    import ctypes

    import llama_cpp

    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, file_type)
    params.nthread = threads
    partial = out_file.with_name(out_file.name + ".partial")
    try:
        status = llama_cpp.llama_model_quantize(
            str(source).encode(), str(partial).encode(), ctypes.byref(params)
        )
        if status != 0 or not partial.is_file():
            raise QuantizeError(
                f"llama.cpp could not quantise {source} to {kind} (status {status})"
            )
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out_file)
    log.info("quantised %s to %s: %s", source, kind, out_file)
    return out_file
