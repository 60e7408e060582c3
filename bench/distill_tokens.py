"""Tokens per distillation tuple, measured, and the GPU time they imply (docs/distillation.md).

    python -m bench.distill_tokens --dataset bench/out/autofin-data/train.jsonl \
        --out runs/tokens-autofin [--split S] [--limit N] [--embedder minilm|hashing]
        [--tokenizer-gguf FILE] [--batch-size 8] [--max-seq-len 4096] [--mfu 0.4 0.2]
        [--reuse]

Builds a real distill dataset with the existing code path (:func:`distill.dataset.build_dataset`)
from a benchmark's questions: each question's database is profiled into a fresh store (its
knowledge pack imported, as ``bench run`` does, :class:`bench.agent_workspace.AgentWorkspace`),
its gold SQL stored as a labeled (human) experience, and every experience turned into the
prompt the chain sends plus the target reply. The tuples (prompt + target under the chat
template) are counted with the Qwen2.5 tokenizer read from the packaged 0.5B GGUF (the 1.5B
and 7B Qwen2.5-Coder models share it). Prints the count, mean, p50, p90, p95 and max tokens
per tuple (prompt, target, both; train and validation tuples), the tokens of one epoch (the
train tuples, what the trainer reads; also padded to the longest tuple of each batch, as trl
pads without packing), and for a 1.5B and a 7B student, LoRA and full fine-tuning, the FLOPs
and H100 time of one epoch at each ``--mfu`` (:func:`plan`, whose docstring states the
formula). Writes the store, the dataset, what it was built from (``build.json``) and
``tokens.json`` to ``--out``; ``--reuse`` counts the dataset already there instead of
building it again, when it was built from the same dataset, split, limit, embedder and
validation share (refused otherwise: ``tokens.json`` names what was counted).
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUILD_RECORD = "build.json"  # what the dataset in --out was built from (--reuse checks it)
H100_BF16_DENSE_FLOPS = 989e12  # NVIDIA H100 SXM datasheet: 989 TFLOPS bf16, dense
STUDENTS = {
    # Qwen2.5-Coder model cards / config.json: parameters, layers, hidden size
    "qwen2.5-coder-1.5b": (1.54e9, 28, 1536),
    "qwen2.5-coder-7b": (7.61e9, 28, 3584),
}


@dataclass(frozen=True)
class Lengths:
    """Tokens of each tuple: its prompt (system + user under the chat template) and all of
    it (prompt + the assistant's target); the target is the difference."""

    prompt: list[int]
    total: list[int]

    @property
    def target(self) -> list[int]:
        return [t - p for p, t in zip(self.prompt, self.total, strict=True)]


def stats(values: Sequence[int]) -> dict[str, float]:
    """Count, mean, p50, p90, p95 and max (nearest-rank percentiles)."""
    ordered = sorted(values)
    if not ordered:
        return {"count": 0}

    def rank(q: float) -> int:
        return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]

    return {
        "count": len(ordered),
        "mean": round(sum(ordered) / len(ordered), 1),
        "p50": rank(0.5),
        "p90": rank(0.9),
        "p95": rank(0.95),
        "max": ordered[-1],
        "sum": sum(ordered),
    }


def padded_tokens(lengths: Sequence[int], batch_size: int, seed: int = 0) -> int:
    """Tokens one epoch computes when the tuples come in random order (the trainer's
    sampler) and each batch is padded to its longest tuple (trl without packing)."""
    order = list(lengths)
    random.Random(seed).shuffle(order)
    return sum(
        max(order[i : i + batch_size]) * len(order[i : i + batch_size])
        for i in range(0, len(order), batch_size)
    )


def plan(
    tokens: int, tuples: int, mean_len: float, mfus: Sequence[float], *, epochs: float = 1.0
) -> list[dict[str, Any]]:
    """FLOPs and H100 hours of ``epochs`` over ``tokens`` tokens (``tuples`` tuples) for each
    student and method, and the seconds per 1,000 tuples of the same lengths.

    Per token, with N parameters, L layers, hidden size d and sequence length s (the mean
    tuple length): a forward pass is 2N (the matmuls) + 4·L·d·s (attention scores and
    values, PaLM's count, Chowdhery et al. 2022, appendix B); trl turns on gradient
    checkpointing, so the forward runs twice. Full fine-tuning: forward, recomputed
    forward, backward (4N for input and weight gradients) = 8N + 16·L·d·s. LoRA: the frozen
    weights need no weight gradient, so the backward is 2N (the adapters' own FLOPs are
    under 1 % at rank 16) = 6N + 16·L·d·s. Time = FLOPs / (MFU x 989 TFLOPS)."""
    rows = []
    for name, (params, layers, hidden) in STUDENTS.items():
        for method in ("lora", "full"):
            per_token = flops_per_token(method, params, layers, hidden, mean_len)
            flops = epochs * tokens * per_token
            for mfu in mfus:
                seconds = flops / (mfu * H100_BF16_DENSE_FLOPS)
                rows.append(
                    {
                        "student": name,
                        "method": method,
                        "mfu": mfu,
                        "flops_per_token": per_token,
                        "flops": flops,
                        "h100_seconds": round(seconds, 1),
                        "h100_hours": round(seconds / 3600, 3),
                        "h100_seconds_per_1k_tuples": round(seconds * 1000 / max(tuples, 1), 1),
                    }
                )
    return rows


def flops_per_token(method: str, params: float, layers: int, hidden: int, mean_len: float) -> float:
    """Training FLOPs per token of a ``method`` ("lora" or "full") step with gradient
    checkpointing (:func:`plan`'s count): 6N (LoRA) or 8N (full) + 16·L·d·s."""
    weights = {"lora": 6, "full": 8}[method]
    return weights * params + 16 * layers * hidden * mean_len


def tuple_lengths(rows: Sequence[dict[str, Any]], tokenizer: Any) -> Lengths:
    """Prompt and total tokens of each dataset row under the tokenizer's chat template."""

    def count(conversation: list[dict[str, str]], generation: bool) -> int:
        ids = tokenizer.apply_chat_template(
            conversation, tokenize=True, add_generation_prompt=generation
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return len(ids)

    prompts, totals = [], []
    for row in rows:
        prompts.append(count(row["messages"], True))
        totals.append(
            count([*row["messages"], {"role": "assistant", "content": row["target"]}], False)
        )
    return Lengths(prompts, totals)


def build(args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """The dataset of ``args.dataset``'s questions (module docstring): its rows by file
    (``train``, ``validation``). ``--reuse`` reads the one in ``--out`` if it was built from
    the same inputs (``build.json``), a ``ValueError`` naming both otherwise."""
    dataset = args.out / "dataset"
    if args.reuse and (dataset / "train.jsonl").is_file():
        _check_reused(args)
    else:
        _build_dataset(args)
        record = json.dumps(build_inputs(args), indent=2) + "\n"
        (args.out / BUILD_RECORD).write_text(record, encoding="utf-8")
    rows: dict[str, list[dict[str, Any]]] = {}
    for name in ("train", "validation"):
        path = dataset / f"{name}.jsonl"
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
        rows[name] = [json.loads(line) for line in text.splitlines()]
    return rows


def build_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """What the dataset in ``--out`` is built from (``build.json``)."""
    return {
        "dataset": str(args.dataset),
        "split": args.split,
        "limit": args.limit,
        "embedder": args.embedder,
        "validation_share": args.validation_share,
    }


def _check_reused(args: argparse.Namespace) -> None:
    path, wanted = args.out / BUILD_RECORD, build_inputs(args)
    try:
        built = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        built = None
    if built != wanted:
        raise ValueError(
            f"--reuse: the dataset in {args.out} was built from {built or 'unknown inputs'}"
            f" ({path}), not {wanted}; leave --reuse out to build it again"
        )


def _build_dataset(args: argparse.Namespace) -> None:
    from bench.agent_workspace import AgentWorkspace
    from bench.datasets.registry import load_dataset
    from distill.dataset import DatasetOptions, build_dataset
    from distill.split import SplitRule

    dataset = load_dataset(args.dataset)
    examples = [e for e in dataset.examples if args.split is None or e.split == args.split]
    examples = [e for e in examples if e.gold_sql][: args.limit]
    embedder = None
    if args.embedder == "hashing":
        from indices.embeddings import HashingEmbedder

        embedder = HashingEmbedder()
    args.out.mkdir(parents=True, exist_ok=True)
    store = args.out / "knowledge.db"
    store.unlink(missing_ok=True)
    workspace = AgentWorkspace(f"sqlite:///{store}", embedder)
    try:
        for example in examples:
            workspace.database(example)
            workspace.learn(example, example.gold_sql[0])
        options = DatasetOptions(
            databases=sorted(workspace.databases),
            split=SplitRule(validation_share=args.validation_share),
        )
        build_dataset(
            workspace.store,
            workspace.databases,
            workspace.retriever(),
            args.out / "dataset",
            options,
            show_progress=True,
        )
    finally:
        workspace.close()  # the indices' refresher too, on an error as well


def load_tokenizer(gguf: Path | None) -> Any:
    """The Qwen2.5 tokenizer of ``gguf`` (default: the packaged 0.5B's file)."""
    from transformers import AutoTokenizer

    if gguf is None:
        from agents.llm.models import TEST_MODEL, default_data_dir, pull

        gguf = pull(TEST_MODEL, default_data_dir(), progress=False)
    return AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)


def report(
    rows: list[dict[str, Any]], lengths: Lengths, args: argparse.Namespace, *, trained: int
) -> dict:
    """Everything ``tokens.json`` holds (module docstring); the first ``trained`` rows are
    ``train.jsonl``'s (an epoch), the rest ``validation.jsonl``'s (evaluated, not trained)."""
    total = stats(lengths.total)
    kept = [n for n in lengths.total[:trained] if n <= args.max_seq_len]
    padded = padded_tokens(kept, args.batch_size)
    return {
        **build_inputs(args),
        "tuples": len(rows),
        "train_tuples": trained,
        "sources": _count(r["source"] for r in rows),
        "with_cot": sum(1 for r in rows if r.get("cot")),
        "tokens": {
            "prompt": stats(lengths.prompt),
            "target": stats(lengths.target),
            "total": total,
        },
        "over_max_seq_len": trained - len(kept),
        "max_seq_len": args.max_seq_len,
        "epoch_tokens": sum(kept),
        "batch_size": args.batch_size,
        "epoch_tokens_padded": padded,
        "plan": plan(padded, len(kept), stats(kept).get("mean", 0.0), args.mfu),
    }


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def render(result: dict[str, Any]) -> str:
    """The figures as text: the length table, then one line per student, method and MFU."""
    lines = [f"{result['dataset']}: {result['tuples']} tuples {result['sources']}"]
    for part, row in result["tokens"].items():
        shown = ", ".join(f"{k} {v}" for k, v in row.items() if k != "count")
        lines.append(f"  {part:<7} tokens: {shown}")
    lines.append(
        f"one epoch ({result['train_tuples']} train tuples): {result['epoch_tokens']:,} tokens"
        f" ({result['over_max_seq_len']} tuples over "
        f"{result['max_seq_len']} dropped), {result['epoch_tokens_padded']:,} computed at "
        f"batch size {result['batch_size']} (padded to each batch's longest)"
    )
    for row in result["plan"]:
        lines.append(
            f"  {row['student']:<20} {row['method']:<4} MFU {row['mfu']:.0%}: "
            f"{row['flops_per_token'] / 1e9:.1f} GFLOP/token, {row['flops']:.3g} FLOP, "
            f"{row['h100_seconds']:,.0f} s on one H100 per epoch, "
            f"{row['h100_seconds_per_1k_tuples']:,.0f} s per 1,000 such tuples"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.distill_tokens", description=__doc__)
    parser.add_argument("--dataset", required=True, help="a bench dataset name or path")
    parser.add_argument("--out", type=Path, required=True, help="folder for store, dataset")
    parser.add_argument("--split", help="keep only this split of the dataset (e.g. train)")
    parser.add_argument("--limit", type=int, help="first N questions")
    parser.add_argument("--embedder", choices=["minilm", "hashing"], default="minilm")
    parser.add_argument("--tokenizer-gguf", type=Path, help="default: the packaged 0.5B")
    parser.add_argument("--validation-share", type=float, default=0.1)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-seq-len", type=int, default=4096, help="longer tuples dropped")
    parser.add_argument("--mfu", type=float, nargs="+", default=[0.4, 0.2])
    parser.add_argument("--reuse", action="store_true", help="count the dataset in --out")
    args = parser.parse_args(argv)
    built = build(args)
    rows = built["train"] + built["validation"]
    lengths = tuple_lengths(rows, load_tokenizer(args.tokenizer_gguf))
    result = report(rows, lengths, args, trained=len(built["train"]))
    (args.out / "tokens.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(render(result))
    print(f"wrote {args.out / 'tokens.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
