"""bench.distill_gpu: the measurement of a distill run, smoke-tested on a CPU with a 2-layer
random student (the figures themselves come from a GPU node, docs/distillation.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.distill_gpu import main
from bench.distill_tokens import flops_per_token
from tests.distill.tiny import tiny_base_and_data


def test_each_method_is_trained_measured_and_cleaned_up(tmp_path: Path):
    tokenizer, data = tiny_base_and_data(tmp_path, copies=4)  # only its tokenizer is read
    out = tmp_path / "out"
    common = ["--data", str(data), "--tokenizer", str(tokenizer), "--out", str(out)]
    argv = [*common, "--run", "tiny:lora", "--run", "tiny:full", "--batch-size", "2"]
    argv += ["--device", "cpu"]
    assert main(argv) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["epoch"]["real_tokens"] == results["epoch"]["padded_tokens"] > 0
    lora, full = results["runs"]
    assert (lora["method"], full["method"]) == ("lora", "full")
    epoch = results["epoch"]
    for row in (lora, full):
        assert row["steps"] == 2 and row["train_tuples"] == 4  # 4 tuples, batches of 2
        assert 0 < row["first_step_s"] <= row["train_s"]
        # per layer: q, k, v (with biases; 2 of 4 heads for k and v), o, the MLP, 2 norms;
        # then the LM head (the input embedding is a lookup)
        layer = (64 * 64 + 64) + 2 * (64 * 32 + 32) + 64 * 64 + 3 * 64 * 128 + 2 * 64
        assert row["matmul_parameters"] == 2 * layer + 151936 * 64
        per_token = flops_per_token(
            row["method"], 2 * layer + 151936 * 64, 2, 64, epoch["mean_len"]
        )
        assert row["flops"] == pytest.approx(per_token * epoch["padded_tokens"])
        assert row["mfu"] == round(row["flops"] / row["train_s"] / 989e12, 3)
        assert "peak_allocated_gb" not in row  # CUDA's counters only on a GPU
    assert full["flops"] > lora["flops"]  # 8N against 6N
    assert not (out / "base-tiny").exists()  # the base is removed once measured
    for method in ("lora", "full"):  # the runs' checkpoints and final weights too
        assert not (out / f"run-tiny-{method}").exists()
        assert not (out / f"row-tiny-{method}.json").exists()
        assert (out / f"log-tiny-{method}.txt").is_file()


def test_a_run_over_the_budget_is_skipped_and_a_failing_one_is_a_row(tmp_path: Path):
    tokenizer, data = tiny_base_and_data(tmp_path, copies=4)  # only its tokenizer is read
    out = tmp_path / "out"
    common = ["--data", str(data), "--tokenizer", str(tokenizer), "--out", str(out)]
    argv = [*common, "--run", "tiny:lora", "--device", "cpu"]
    argv += ["--max-seq-len", "20"]
    assert main(argv) == 1  # every tuple is longer than 20 tokens: the run fails
    (row,) = json.loads((out / "results.json").read_text())["runs"]
    assert "longer than max_seq_len" in row["error"] and row["rc"] == 1
    assert main([*argv[:-2], "--budget-s", "1e-9"]) == 0
    (row,) = json.loads((out / "results.json").read_text())["runs"]
    assert row == {"student": "tiny", "method": "lora", "skipped": "over --budget-s"}
