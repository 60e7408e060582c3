"""Loading a GGUF into llama-cpp-python without llama.cpp's AMX weight buffers where they crash.

llama.cpp built on a CPU with Intel AMX (Sapphire Rapids and later) repacks Q4_K/Q6_K weights
into its AMX buffer type at load, and the first matrix product over them can end the process
with a segmentation fault (ggml-org/llama.cpp#20824; seen here with llama-cpp-python 0.3.36
and both packaged Qwen2.5-Coder GGUFs on a 2-core Xeon with ``amx_int8``: the model loads, the
first reply kills Python). No Python exception can catch that, so where the llama.cpp build
reports ``AMX_INT8 = 1`` the model is loaded with ``use_extra_bufts`` off: weights stay in
plain CPU buffers (no AMX, no CPU repack), which costs a little speed and nothing else.
``weight_repack=True`` keeps llama.cpp's choice for a build known to be sound.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

log = logging.getLogger(__name__)

_PARAMS_LOCK = threading.Lock()  # the default-parameters hook below is process-wide


def amx_in_build() -> bool:
    """True when the installed llama.cpp's CPU backend was built with AMX (``AMX_INT8 = 1``)."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info()
    text = info.decode("utf-8", errors="replace") if isinstance(info, bytes) else str(info)
    return "AMX_INT8 = 1" in text


def load_llama(model_path: str, *, weight_repack: bool | None = None, **options: Any) -> Any:
    """``llama_cpp.Llama(model_path, **options)``, with llama.cpp's extra weight buffers
    (AMX, CPU repack) off when ``weight_repack`` is False, or None (the default) and the build
    has AMX."""
    import llama_cpp
    import llama_cpp.llama_cpp as low_level

    repack = (not amx_in_build()) if weight_repack is None else weight_repack
    if repack:
        with _PARAMS_LOCK:  # not while another load has the defaults replaced
            return llama_cpp.Llama(model_path=model_path, **options)
    if weight_repack is None:
        log.info(
            "llama.cpp was built with AMX: loading %s without extra weight buffers"
            " (AMX matrix products over Q4_K weights can crash the process)",
            model_path,
        )
    defaults = low_level.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    with _PARAMS_LOCK:
        low_level.llama_model_default_params = without_extra_buffers
        try:
            llama = llama_cpp.Llama(model_path=model_path, **options)
        finally:
            low_level.llama_model_default_params = defaults
    params = getattr(llama, "model_params", None)
    if params is not None and getattr(params, "use_extra_bufts", False):
        log.warning(  # llama-cpp-python no longer reads its defaults where we replace them
            "%s was loaded with llama.cpp's extra weight buffers despite weight_repack=False",
            model_path,
        )
    return llama
