"""The whole loop on a tiny random Qwen2 student: Spider experiences → tuples → LoRA steps
(the loss falls) → resume → merge → GGUF → llama.cpp loads it and answers."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from distill.config import LoraSettings, TrainConfig
from distill.export import export
from distill.train import TrainResult, train
from tests.distill.conftest import DB, experiences, spider_store
from tests.distill.tiny import tiny_run_config

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[TrainConfig, TrainResult]:
    root = tmp_path_factory.mktemp("loop")
    built = spider_store(root / "store", experiences())
    config = tiny_run_config(
        root,
        built.store,
        {DB: built.database},
        built.retriever,
        lora=LoraSettings(rank=8, alpha=16, dropout=0.0),
        learning_rate=1e-2,
        max_steps=8,
        batch_size=2,
        save_steps=4,
        max_seq_len=2048,
    )
    built.database.close()
    return config, train(config)


def test_a_few_lora_steps_lower_the_loss(trained):
    config, result = trained
    assert result.steps == 8 and len(result.losses) == 8
    assert result.train_tuples > 10 and result.dropped_over_length == 0
    assert sum(result.losses[-2:]) / 2 < sum(result.losses[:2]) / 2 - 0.1
    assert result.eval_loss is not None
    run = config.output_dir
    assert (run / "final" / "adapter_model.safetensors").is_file()
    assert json.loads((run / "manifest.json").read_text())["counts"]["kept"]["human"] == 24
    assert json.loads((run / "config.json").read_text())["learning_rate"] == 1e-2
    steps = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    logged = [s for s in steps if s["event"] == "step"]
    assert [s["step"] for s in logged] == list(range(1, 9))
    assert logged[-1]["eta_s"] == 0 and logged[0]["eta_s"] > 0
    assert all(s["rss_mb"] > 0 for s in logged)
    (memory,) = [s for s in steps if s["event"] == "memory"]
    assert memory["peak_rss_mb"] >= max(s["rss_mb"] for s in logged)
    assert memory["heap_trims"] >= 8  # after each step and each validation batch (a CPU run)


def test_training_resumes_from_the_last_checkpoint(trained):
    config, _ = trained
    result = train(config.model_copy(update={"max_steps": 10}))
    assert result.resumed_from is not None and result.resumed_from.name == "checkpoint-8"
    assert result.steps == 10
    starts = [
        json.loads(x)
        for x in (config.output_dir / "metrics.jsonl").read_text().splitlines()
        if '"start"' in x
    ]
    assert starts[-1]["resumed_at_step"] == 8


def test_the_exported_gguf_loads_in_llama_cpp_and_answers(trained, tmp_path: Path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from agents.llm.llamacpp import LlamaCppLLM
    from agents.llm.llamacpp_load import load_llama
    from agents.sql.generate import FENCE_END, SQL_FENCE

    config, _ = trained
    gguf_path = export(config.output_dir / "final", config.base_model, tmp_path, dtype="f32")
    merged = tmp_path / "hf"
    tokenizer = AutoTokenizer.from_pretrained(str(merged))
    text = "SELECT count(*) FROM singer WHERE country = 'France'"
    ids = tokenizer.encode(text)
    llama = load_llama(str(gguf_path), n_ctx=256, logits_all=True, verbose=False, n_threads=2)
    try:
        assert llama.tokenize(text.encode(), add_bos=False, special=False) == ids
        llama.eval(ids)
        theirs = np.array(llama.scores[: len(ids)])
    finally:
        llama.close()
    model = AutoModelForCausalLM.from_pretrained(str(merged), dtype=torch.float32)
    with torch.no_grad():
        ours = model(torch.tensor([ids])).logits[0].numpy()
    assert np.abs(theirs - ours).max() < 0.05  # the same network, merged adapter included
    top2 = np.sort(ours, axis=-1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 0.05  # where the next token is not a near-tie
    assert (theirs.argmax(-1) == ours.argmax(-1))[clear].all()
    llm = LlamaCppLLM(str(gguf_path), n_ctx=2048, n_threads=2, seed=1)
    messages = [{"role": "user", "content": "How many singers do we have?"}]
    reply = llm.chat(
        messages, max_tokens=8, temperature=0.0, reply_prefix=SQL_FENCE, stop=[FENCE_END]
    )
    assert reply.text.startswith(SQL_FENCE) and reply.completion_tokens >= 1


def test_an_export_over_an_earlier_one_replaces_the_file_and_spares_its_links(
    trained, tmp_path: Path
):
    """The GGUF is written beside and renamed over: a hard link to the earlier export (a
    student registered with --link) keeps its bytes; nothing partial is left."""
    config, _ = trained
    first = export(config.output_dir / "final", config.base_model, tmp_path, dtype="f32")
    linked = tmp_path / "registered.gguf"
    os.link(first, linked)
    before = linked.read_bytes()
    second = export(config.output_dir / "final", config.base_model, tmp_path, dtype="f16")
    assert second == first and second.stat().st_ino != linked.stat().st_ino
    assert linked.read_bytes() == before and second.read_bytes() != before
    assert not list(tmp_path.glob("*.partial"))


def test_the_cli_trains_from_a_yaml_config_and_exports(trained, tmp_path: Path, capsys):
    from server.cli_distill import run_distill_command
    from tests.distill.test_cli_jobs import parse

    config, _ = trained
    path = tmp_path / "student.yaml"
    path.write_text(
        f"base_model: {config.base_model}\ndata: {config.data}\noutput_dir: run\n"
        "lora: {rank: 4, alpha: 8}\nmax_seq_len: 2048\nbatch_size: 2\n"
    )
    assert (
        run_distill_command(parse(["distill", "train", str(path), "--max-steps", "2"]), None) == 0
    )
    printed = capsys.readouterr().out
    assert "step 2/2 loss" in printed and '"steps": 2' in printed
    adapter = tmp_path / "run" / "final"
    argv = ["distill", "export", str(adapter), "--base", str(config.base_model)]
    argv += ["--out", str(tmp_path / "out"), "--dtype", "f32"]
    assert run_distill_command(parse(argv), None) == 0
    assert "student.gguf" in capsys.readouterr().out
    assert (tmp_path / "out" / "student.gguf").stat().st_size > 100_000


def test_a_quantised_export_is_smaller_loads_and_leaves_no_intermediate(trained, tmp_path):
    """``quantize="q8_0"``: llama.cpp's quantiser writes ``student.gguf`` from the F16 file,
    which is removed; the file says Q8_0 and answers in llama.cpp."""
    import gguf
    import llama_cpp

    from agents.llm.llamacpp import LlamaCppLLM

    config, _ = trained
    full = export(config.output_dir / "final", config.base_model, tmp_path / "f16")
    small = export(config.output_dir / "final", config.base_model, tmp_path, quantize="q8_0")
    assert small == tmp_path / "student.gguf" and small.stat().st_size < full.stat().st_size
    assert sorted(p.name for p in tmp_path.glob("*.gguf*")) == ["student.gguf"]
    field = gguf.GGUFReader(str(small)).fields["general.file_type"]
    assert int(field.parts[field.data[0]][0]) == llama_cpp.LLAMA_FTYPE_MOSTLY_Q8_0
    llm = LlamaCppLLM(str(small), n_ctx=512, n_threads=2, seed=1)
    reply = llm.chat([{"role": "user", "content": "How many singers?"}], max_tokens=4)
    assert reply.completion_tokens >= 1


def test_an_unknown_quantisation_is_refused_before_the_merge(trained, tmp_path: Path):
    from distill.quantize import QuantizeError, quantize_gguf

    config, _ = trained
    with pytest.raises(QuantizeError, match="'q3_x'"):
        export(config.output_dir / "final", config.base_model, tmp_path, quantize="q3_x")
    assert not (tmp_path / "hf").exists()
    with pytest.raises(QuantizeError, match=r"no GGUF to quantise at .*missing\.gguf"):
        quantize_gguf(tmp_path / "missing.gguf", tmp_path / "out.gguf", "q8_0")
