"""Export a trained student: merge the LoRA adapter into the base, save it, write a GGUF.

``merge_adapter`` loads the base model with the adapter of a run (``final/`` or a
checkpoint), merges it (peft ``merge_and_unload``) and saves a plain Hugging Face model with
its tokenizer. A full fine-tune is already plain and is copied as it is.

``write_gguf`` writes that model as a GGUF that llama.cpp loads, for the Qwen2 architecture
(the packaged models' family), with the ``gguf`` package's ``GGUFWriter``: no llama.cpp
checkout is needed (its ``convert_hf_to_gguf.py`` ships in neither llama-cpp-python's wheel
nor this machine). Tensor names come from ``gguf``'s own mapping
(``get_tensor_name_map(MODEL_ARCH.QWEN2)``); Qwen2's query and key weights are written
unpermuted, as llama.cpp's converter does; norms stay F32 and the matrices are written as
``dtype`` (F16 by default; F32 for exactness). The tokenizer (byte-level BPE: tokens,
merges, special ids, chat template) is read from the model folder's ``tokenizer.json``; the
vocabulary is padded with unused tokens up to the model's ``vocab_size``. ``export(...,
quantize="q4_k_m")`` then quantises the F16 file with llama.cpp's own quantiser
(:mod:`distill.quantize`), as the packaged models are.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)
ARCH = "qwen2"


class ExportError(ValueError):
    """A model that cannot be exported (names the folder and what is wrong)."""


def merge_adapter(adapter_dir: Path, base_model: Path, out_dir: Path) -> Path:
    """Merge the LoRA adapter in ``adapter_dir`` into ``base_model``; save to ``out_dir``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer_dir = adapter_dir if (adapter_dir / "tokenizer.json").is_file() else base_model
    if (adapter_dir / "adapter_config.json").is_file():
        from peft import PeftModel

        base = AutoModelForCausalLM.from_pretrained(str(base_model))
        merged = PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()
    elif (adapter_dir / "config.json").is_file():
        merged = AutoModelForCausalLM.from_pretrained(str(adapter_dir))
    else:
        raise ExportError(f"{adapter_dir} holds neither a LoRA adapter nor a model")
    merged.save_pretrained(str(out_dir))
    AutoTokenizer.from_pretrained(str(tokenizer_dir)).save_pretrained(str(out_dir))
    return out_dir


def write_gguf(model_dir: Path, out_file: Path, *, dtype: str = "f16") -> Path:
    """Write the Qwen2 model in ``model_dir`` to ``out_file`` (module docstring)."""
    import gguf
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != ARCH:
        raise ExportError(
            f"{model_dir} is a {config.get('model_type')!r} model; only qwen2 is exported"
        )
    if dtype not in ("f16", "f32"):
        raise ExportError(f"dtype must be 'f16' or 'f32', not {dtype!r}")
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    layers = int(config["num_hidden_layers"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN2, layers)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    # written beside and renamed over: a crash leaves no half-written GGUF at ``out_file``, and
    # a student registered with --link (the same inode) keeps its bytes
    partial = out_file.with_name(out_file.name + ".partial")
    try:
        writer = gguf.GGUFWriter(str(partial), ARCH)
        _add_hparams(writer, config, model_dir.name, dtype)
        _add_tokenizer(writer, model_dir, int(config["vocab_size"]))
        tied = bool(config.get("tie_word_embeddings"))
        for name, tensor in model.state_dict().items():
            if name == "lm_head.weight" and tied:
                continue
            target = names.get_name(name, try_suffixes=(".weight", ".bias"))
            if target is None:
                raise ExportError(f"{model_dir}: no GGUF name for tensor {name}")
            data = tensor.detach().to(torch.float32).numpy()
            if dtype == "f16" and data.ndim == 2:
                data = data.astype(np.float16)
            writer.add_tensor(target, data)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, out_file)
    log.info("wrote %s", out_file)
    return out_file


def _add_hparams(writer: Any, config: dict[str, Any], name: str, dtype: str) -> None:
    import gguf

    heads = int(config["num_attention_heads"])
    writer.add_name(name)
    writer.add_context_length(int(config.get("max_position_embeddings", 32768)))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(heads)
    writer.add_head_count_kv(int(config.get("num_key_value_heads", heads)))
    writer.add_rope_freq_base(float(config.get("rope_theta", 1_000_000.0)))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    ftype = gguf.LlamaFileType.MOSTLY_F16 if dtype == "f16" else gguf.LlamaFileType.ALL_F32
    writer.add_file_type(ftype)


def _add_tokenizer(writer: Any, model_dir: Path, vocab_size: int) -> None:
    import gguf

    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise ExportError(f"{model_dir} has no tokenizer.json")
    spec = json.loads(path.read_text(encoding="utf-8"))
    model = spec.get("model") or {}
    if model.get("type") != "BPE":
        raise ExportError(f"{path}: a {model.get('type')!r} tokenizer; only BPE is exported")
    vocab: dict[int, str] = {int(i): t for t, i in model["vocab"].items()}
    types: dict[int, int] = dict.fromkeys(vocab, gguf.TokenType.NORMAL)
    special: dict[str, int] = {}
    for added in spec.get("added_tokens", []):
        vocab[int(added["id"])] = added["content"]
        kind = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
        types[int(added["id"])] = kind
        special[added["content"]] = int(added["id"])
    if max(vocab) >= vocab_size:
        raise ExportError(f"{path}: token id {max(vocab)} past the model's vocab_size {vocab_size}")
    tokens, token_types = [], []
    for index in range(vocab_size):
        tokens.append(vocab.get(index, f"[PAD{index}]"))
        token_types.append(types.get(index, gguf.TokenType.UNUSED))
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(ARCH)
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    writer.add_token_merges(merges)
    settings = _tokenizer_settings(model_dir)
    eos = special.get(settings.get("eos_token") or "<|im_end|>")
    pad = special.get(settings.get("pad_token") or "<|endoftext|>")
    if eos is not None:
        writer.add_eos_token_id(eos)
    if pad is not None:
        writer.add_pad_token_id(pad)
        writer.add_bos_token_id(pad)  # Qwen2 has no BOS; llama.cpp's converter uses this
    writer.add_add_bos_token(False)
    if settings.get("chat_template"):
        writer.add_chat_template(settings["chat_template"])


def _tokenizer_settings(model_dir: Path) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    config = model_dir / "tokenizer_config.json"
    if config.is_file():
        raw = json.loads(config.read_text(encoding="utf-8"))
        for key in ("eos_token", "pad_token", "chat_template"):
            value = raw.get(key)
            settings[key] = value.get("content") if isinstance(value, dict) else value
    template = model_dir / "chat_template.jinja"
    if not settings.get("chat_template") and template.is_file():
        settings["chat_template"] = template.read_text(encoding="utf-8")
    return settings


def export(
    run_adapter: Path,
    base_model: Path,
    out_dir: Path,
    *,
    dtype: str = "f16",
    quantize: str | None = None,
) -> Path:
    """Merge (:func:`merge_adapter`) into ``out_dir/hf`` and write ``out_dir/student.gguf``:
    ``dtype``, or quantised to ``quantize`` (:data:`distill.quantize.QUANT_TYPES`) from an
    intermediate ``student.<dtype>.gguf`` that is removed afterwards."""
    if quantize is not None:
        from distill.quantize import llama_file_type

        llama_file_type(quantize)  # refused before the merge, not after minutes of it
    merged = merge_adapter(run_adapter, base_model, out_dir / "hf")
    if quantize is None:
        gguf_path = write_gguf(merged, out_dir / "student.gguf", dtype=dtype)
    else:
        from distill.quantize import quantize_gguf

        full = write_gguf(merged, out_dir / f"student.{dtype}.gguf", dtype=dtype)
        try:
            gguf_path = quantize_gguf(full, out_dir / "student.gguf", quantize)
        finally:
            full.unlink(missing_ok=True)
    if not gguf_path.is_file():  # pragma: no cover - GGUFWriter raises on failure
        raise ExportError(f"no GGUF written to {gguf_path}")
    shutil.copyfile(merged / "config.json", out_dir / "config.json")
    return gguf_path
