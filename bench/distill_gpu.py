"""Seconds per epoch and GPU memory of ``distill train``, measured (docs/distillation.md).

    python -m bench.distill_gpu --data DIR --tokenizer DIR --out DIR
        [--run STUDENT:METHOD ...] [--batch-size 8]
        [--max-seq-len 4096] [--epochs 1] [--device cuda] [--budget-s S]

The GPU plan of docs/distillation.md (:mod:`bench.distill_tokens`) *assumes* a utilisation
(MFU 40 % and 20 %) and rules of thumb for memory; this measures both. Each ``--run`` names a
student and a method (``lora`` or ``full``; default the plan's four). The student's base
model is a Qwen2 model of its architecture (:data:`STUDENT_SHAPES`, read off the packaged
GGUFs and Qwen2.5-Coder-7B's config; an untied output matrix, as :mod:`distill.base_weights`
makes from a GGUF) with random bf16 weights and the Qwen2.5 tokenizer in ``--tokenizer`` (a
folder, :func:`save_tokenizer`). :func:`distill.train.train` trains it on ``--data`` (a
dataset folder from ``almanac distill data`` or ``bench.distill_tokens``) exactly as
``almanac distill train`` does (trl's SFTTrainer, bf16 on a GPU, LoRA rank 16 or every
weight, a checkpoint at the end), each run in its own process, so that its peak memory is its
own and a failure (out of memory) costs only its row. A step costs the same whatever the
weights' values, and the packaged GGUFs are too large for a leased GPU node's transfer limit:
random weights measure the time and memory; the losses mean nothing.

Prints a line per run and writes ``results.json`` (each run's output in
``log-<student>-<method>.txt``): the trainer's seconds (from its start to the last step, the
first step's CUDA warm-up included), the median step, the whole call (loading, evaluating
and saving too), real and padded tokens of the epoch (trl pads each batch to its longest
tuple, in the sampler's order; :func:`bench.distill_tokens.padded_tokens` estimates it with
a seeded shuffle), the achieved TFLOP/s and MFU over the padded tokens against 989 TFLOP/s
(the H100's and H200's dense bf16; also with the first step's time, CUDA's warm-up, replaced
by a median step's) by :func:`bench.distill_tokens.flops_per_token` with N = the parameters a
forward multiplies by at every position (the transformer blocks and the LM head; the input
embedding is a lookup), and the peak GPU memory allocated and reserved. ``--budget-s`` skips
the runs that would start after that many seconds (a lease's limit; a run started is not
stopped). ``tiny`` is a 2-layer
student for a smoke test on a CPU.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.distill_tokens import H100_BF16_DENSE_FLOPS, flops_per_token, padded_tokens

STUDENT_SHAPES: dict[str, dict[str, Any]] = {
    # GGUF metadata of the packaged 0.5B and 1.5B (block_count, embedding_length, ...) and
    # Qwen2.5-Coder-7B's config.json; every GGUF carries its own output matrix
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=151936),
    "qwen2.5-coder-0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                               num_attention_heads=14, num_key_value_heads=2,
                               vocab_size=151936),
    "qwen2.5-coder-1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
                               num_attention_heads=12, num_key_value_heads=2,
                               vocab_size=151936),
    "qwen2.5-coder-7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                             num_attention_heads=28, num_key_value_heads=4, vocab_size=152064),
}  # fmt: skip
RESULTS = "results.json"
DEFAULT_RUNS = [
    f"qwen2.5-coder-{size}:{method}" for size in ("1.5b", "7b") for method in ("lora", "full")
]


def _base_dir(out: Path, student: str) -> Path:
    return out / f"base-{student}"


def _run_file(out: Path, student: str, method: str, kind: str) -> Path:
    """The run's folder (``kind`` "run"), its row (``"row"``, .json) or output (``"log"``,
    .txt) in ``out``."""
    suffix = {"run": "", "row": ".json", "log": ".txt"}[kind]
    return out / f"{kind}-{student}-{method}{suffix}"


def save_tokenizer(out: Path, gguf: Path | None = None) -> Path:
    """Write the Qwen2.5 tokenizer of ``gguf`` (default: the packaged 0.5B's) to ``out``."""
    from bench.distill_tokens import load_tokenizer

    load_tokenizer(gguf).save_pretrained(str(out))
    return out


def make_base(student: str, tokenizer_dir: Path, out: Path, device: str) -> int:
    """A random-weight model of ``student``'s shape and the tokenizer, saved in ``out``;
    returns its transformer blocks' and LM head's parameters (the N of the FLOP count). The
    GPU memory it took is handed back before the runs."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    config = Qwen2Config(
        **STUDENT_SHAPES[student],
        max_position_embeddings=32768,
        rope_theta=1e6,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen2ForCausalLM._from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    matmuls = sum(
        p.numel() for p in [*model.model.layers.parameters(), *model.lm_head.parameters()]
    )
    del model
    if device == "cuda":
        torch.cuda.empty_cache()
    return matmuls


def train_once(args: argparse.Namespace, student: str, method: str) -> dict[str, Any]:
    """One run (in this process): train the base in ``--out/base-<student>``, return its row."""
    import torch

    from distill.config import TrainConfig
    from distill.train import train

    cuda = args.device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    run_dir = _run_file(args.out, student, method, "run")
    shutil.rmtree(run_dir, ignore_errors=True)  # an aborted run's metrics would be appended to
    config = TrainConfig(
        base_model=_base_dir(args.out, student),
        data=args.data,
        output_dir=run_dir,
        full_finetune=method == "full",
        learning_rate=2e-4 if method == "lora" else 1e-5,
        epochs=args.epochs,
        max_seq_len=args.max_seq_len,
        batch_size=args.batch_size,
        device=args.device,
        save_steps=1_000_000,  # no mid-run checkpoint: a 7B full one is ~90 GB
    )
    started = time.perf_counter()
    result = train(config, resume=False)
    seconds = time.perf_counter() - started
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    elapsed = [r["elapsed_s"] for r in rows if r.get("event") == "step"]
    steps = [b - a for a, b in itertools.pairwise(elapsed)]
    row = {
        "student": student,
        "method": method,
        "steps": result.steps,
        "train_tuples": result.train_tuples,
        "train_s": elapsed[-1] if elapsed else None,
        "first_step_s": elapsed[0] if elapsed else None,
        "median_step_s": round(statistics.median(steps), 3) if steps else None,
        "call_s": round(seconds, 1),
        "last_loss": result.losses[-1] if result.losses else None,
    }
    if cuda:
        row["peak_allocated_gb"] = round(torch.cuda.max_memory_allocated() / 1e9, 1)
        row["peak_reserved_gb"] = round(torch.cuda.max_memory_reserved() / 1e9, 1)
        row["gpu"] = torch.cuda.get_device_name()
    return row


def epoch_tokens(
    data: Path, tokenizer_dir: Path, batch_size: int, max_seq_len: int
) -> dict[str, float]:
    """Real and padded tokens of one epoch of ``data``'s train tuples that fit
    ``max_seq_len`` (training drops the others), and the mean tuple."""
    from transformers import AutoTokenizer

    from bench.distill_tokens import tuple_lengths
    from distill.dataset_files import TRAIN, read_tuples

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    totals = tuple_lengths(read_tuples(data / TRAIN), tokenizer).total
    totals = [n for n in totals if n <= max_seq_len]
    return {
        "real_tokens": sum(totals),
        "padded_tokens": padded_tokens(totals, batch_size),
        "mean_len": sum(totals) / max(len(totals), 1),
    }


def with_throughput(row: dict[str, Any], tokens: dict[str, float], matmuls: int) -> dict[str, Any]:
    """``row`` with its epoch's FLOPs, achieved TFLOP/s and MFU (over the padded tokens,
    against :data:`bench.distill_tokens.H100_BF16_DENSE_FLOPS`), and the MFU with the first
    step's time (CUDA's warm-up) replaced by a median step's."""
    shape = STUDENT_SHAPES[row["student"]]
    per_token = flops_per_token(
        row["method"], matmuls, shape["num_hidden_layers"], shape["hidden_size"],
        tokens["mean_len"],
    )  # fmt: skip
    flops = per_token * tokens["padded_tokens"] * row.get("epochs", 1.0)
    seconds = row.get("train_s") or 0
    achieved = flops / seconds if seconds else 0.0
    steady_s = 0.0
    if seconds and row.get("median_step_s") and row.get("first_step_s") is not None:
        steady_s = seconds - row["first_step_s"] + row["median_step_s"]
    return row | {
        "matmul_parameters": matmuls,
        "flops": flops,
        "tflops_per_s": round(achieved / 1e12, 1),
        "mfu": round(achieved / H100_BF16_DENSE_FLOPS, 3),
        "mfu_steady": round(flops / steady_s / H100_BF16_DENSE_FLOPS, 3) if steady_s else None,
    }


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every ``--run``, each in a child process, within ``--budget-s``; a student's base is
    made before its first run and removed after its last (a 7B's is 15 GB)."""
    started = time.perf_counter()
    tokens = epoch_tokens(args.data, args.tokenizer, args.batch_size, args.max_seq_len)
    print(json.dumps({"epoch": tokens}), flush=True)
    rows: list[dict[str, Any]] = []
    matmuls: dict[str, int] = {}
    for index, (student, method) in enumerate(args.run):
        base = _base_dir(args.out, student)
        if args.budget_s is not None and time.perf_counter() - started > args.budget_s:
            rows.append({"student": student, "method": method, "skipped": "over --budget-s"})
        else:
            try:
                if student not in matmuls:
                    matmuls[student] = make_base(student, args.tokenizer, base, args.device)
            except (OSError, RuntimeError) as exc:  # a full disk, CUDA out of memory
                row = {"student": student, "method": method, "error": f"base: {exc}"}
            else:
                row = _child(args, student, method)
            if "error" not in row:
                row = with_throughput(row | {"epochs": args.epochs}, tokens, matmuls[student])
            rows.append(row)
            print(json.dumps(row), flush=True)
        # the run's checkpoint (a full fine-tune's holds the optimizer) and final weights
        shutil.rmtree(_run_file(args.out, student, method, "run"), ignore_errors=True)
        if all(later != student for later, _ in args.run[index + 1 :]):
            shutil.rmtree(base, ignore_errors=True)
        (args.out / RESULTS).write_text(json.dumps({"epoch": tokens, "runs": rows}, indent=1))
    return rows


def _child(args: argparse.Namespace, student: str, method: str) -> dict[str, Any]:
    row_file = _run_file(args.out, student, method, "row")
    row_file.unlink(missing_ok=True)
    command = [sys.executable, "-m", "bench.distill_gpu", *args.argv, "--only", student, method]
    done = subprocess.run(command, capture_output=True, text=True)
    _run_file(args.out, student, method, "log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or not row_file.is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        rc = done.returncode  # -9: killed (out of host memory)
        return {"student": student, "method": method, "rc": rc, "error": " | ".join(tail)}
    row = json.loads(row_file.read_text())
    row_file.unlink()
    return row


def _run(text: str) -> tuple[str, str]:
    student, _, method = text.partition(":")
    if student not in STUDENT_SHAPES or method not in ("lora", "full"):
        raise argparse.ArgumentTypeError(f"{text!r}: want STUDENT:lora or STUDENT:full")
    return student, method


def parse(argv: list[str]) -> argparse.Namespace:
    """The command line (module docstring); ``argv`` is kept for the child runs."""
    parser = argparse.ArgumentParser(prog="python -m bench.distill_gpu", description=__doc__)
    parser.add_argument("--data", type=Path, required=True, help="a distill dataset folder")
    parser.add_argument("--tokenizer", type=Path, required=True, help="a tokenizer folder")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--run",
        action="append",
        type=_run,
        metavar="STUDENT:METHOD",
        help=f"a student ({', '.join(STUDENT_SHAPES)}) and a method (lora, full); repeatable;"
        f" default: {' '.join(DEFAULT_RUNS)}",
    )
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-seq-len", type=int, default=4096)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--budget-s", type=float, default=None)
    parser.add_argument("--only", nargs=2, metavar=("STUDENT", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.run = args.run or [_run(r) for r in DEFAULT_RUNS]
    args.argv = list(argv)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.only:
        student, method = args.only
        row = train_once(args, student, method)
        _run_file(args.out, student, method, "row").write_text(json.dumps(row))
        return 0
    rows = measure(args)
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
