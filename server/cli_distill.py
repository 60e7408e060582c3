"""``almanac distill``: training data, training, export and base weights for a student.

almanac distill data --out DIR [--db URL] [--name NAME] [--validation-share F]
                     [--validation-db NAME ...] [--min-score S] [--tokenizer MODEL_DIR]
    NL-CoT-SQL tuples from the verified experiences of the target database (human, mined,
    synthetic), each with the prompt ``ask`` sends (:mod:`distill.dataset`), split by
    database and SQL skeleton, curated; writes train.jsonl, validation.jsonl, manifest.json
    (token lengths counted with ``--tokenizer`` when given) and prints the manifest.
almanac distill train CONFIG [--no-resume] [--max-steps N] [--device auto|cpu|cuda]
    Fine-tunes as the YAML/TOML config says (:mod:`distill.config`), resuming from the run's
    last checkpoint; prints one line per step (loss, ETA) and the result as JSON.
almanac distill export ADAPTER --base MODEL_DIR --out DIR [--dtype f16|f32]
    Merges the run's adapter (``RUN/final`` or a checkpoint) into the base and writes
    ``DIR/hf`` and ``DIR/student.gguf`` (:mod:`distill.export`).
almanac distill base --out DIR [--gguf FILE | --model NAME]
    The base model's Hugging Face weights, dequantized from the packaged GGUF
    (:mod:`distill.base_weights`; default the test model, qwen2.5-coder-0.5b).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from server.settings import Settings

DISTILL_COMMANDS = frozenset({"distill"})


def add_distill_commands(commands: Any) -> None:
    distill = commands.add_parser("distill", help="distil verified experiences into a student")
    actions = distill.add_subparsers(dest="distill_action", required=True)
    data = actions.add_parser("data", help="build training tuples from verified experiences")
    data.add_argument("--out", type=Path, required=True, help="dataset folder to write")
    data.add_argument("--db", help="target database URL (default: the configured target)")
    data.add_argument("--name", help="its [DATABASE:...] name")
    data.add_argument("--validation-share", type=float, default=0.1)
    data.add_argument("--validation-db", action="append", default=[], help="held-out database")
    data.add_argument("--min-score", type=float, help="curation threshold (default 0.35)")
    data.add_argument("--tokenizer", type=Path, help="model folder to count tokens with")
    train = actions.add_parser("train", help="fine-tune a student (LoRA or full)")
    train.add_argument("config", type=Path, help="YAML or TOML training config")
    train.add_argument("--no-resume", action="store_true", help="ignore existing checkpoints")
    train.add_argument("--max-steps", type=int, help="override the config's max_steps")
    train.add_argument("--device", choices=["auto", "cpu", "cuda"])
    export = actions.add_parser("export", help="merge the adapter and write a GGUF")
    export.add_argument("adapter", type=Path, help="RUN/final or a checkpoint folder")
    export.add_argument("--base", type=Path, required=True, help="the base model folder")
    export.add_argument("--out", type=Path, required=True)
    export.add_argument("--dtype", choices=["f16", "f32"], default="f16")
    base = actions.add_parser("base", help="dequantize a packaged GGUF into HF weights")
    base.add_argument("--out", type=Path, required=True)
    base.add_argument("--gguf", type=Path, help="a GGUF file (default: a packaged model)")
    base.add_argument("--model", default="qwen2.5-coder-0.5b", help="packaged model name")


def run_distill_command(args: argparse.Namespace, settings: Settings) -> int:
    from distill.checkpoints import CorruptCheckpointError
    from distill.train import DeviceMissingError

    handlers = {"data": _data, "train": _train, "export": _export, "base": _base}
    try:
        return handlers[args.distill_action](args, settings)
    except (DeviceMissingError, CorruptCheckpointError) as exc:
        print(f"error: {exc}")
        return 2


def _data(args: argparse.Namespace, settings: Settings) -> int:
    from distill.curation import CurationWeights
    from distill.dataset import DatasetOptions, build_dataset
    from distill.split import SplitRule
    from indices.index_set import IndexSet
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.cli_agents import resolve_target
    from server.state import configured_embedder

    url, name = resolve_target(args, settings)
    weights = CurationWeights()
    if args.min_score is not None:
        weights = CurationWeights(min_score=args.min_score)
    options = DatasetOptions(
        databases=[name],
        split=SplitRule(args.validation_share, tuple(args.validation_db)),
        curation=weights,
    )
    tokenizer = None
    if args.tokenizer is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(str(args.tokenizer))
    with KnowledgeStore(settings.resolved_store_url) as store:
        database = Database(url)
        try:
            retriever = IndexSet.build(store, configured_embedder(settings)).retriever()
            manifest = build_dataset(
                store,
                {name: database},
                retriever,
                args.out,
                options,
                tokenizer=tokenizer,
                show_progress=True,
            )
        finally:
            database.close()
    print(json.dumps(manifest, indent=2))
    return 0


def _train(args: argparse.Namespace, settings: Settings) -> int:
    from distill.config import load_config
    from distill.train import train

    config = load_config(args.config, max_steps=args.max_steps, device=args.device)

    def on_step(row: dict[str, Any]) -> None:
        eta = "?" if row["eta_s"] is None else f"{row['eta_s']:.0f}s"
        print(f"step {row['step']}/{row['max_steps']} loss {row['loss']:.4f} eta {eta}", flush=True)

    result = train(config, resume=not args.no_resume, on_step=on_step)
    summary = {
        "run_dir": str(result.run_dir),
        "steps": result.steps,
        "first_loss": result.losses[0] if result.losses else None,
        "last_loss": result.losses[-1] if result.losses else None,
        "eval_loss": result.eval_loss,
        "train_tuples": result.train_tuples,
        "dropped_over_length": result.dropped_over_length,
        "resumed_from": str(result.resumed_from) if result.resumed_from else None,
        "seconds": round(result.seconds, 1),
    }
    print(json.dumps(summary, indent=2))
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from distill.export import export

    path = export(args.adapter, args.base, args.out, dtype=args.dtype)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and {args.out / 'hf'}")
    return 0


def _base(args: argparse.Namespace, settings: Settings) -> int:
    from distill.base_weights import dequantize_gguf

    gguf = args.gguf
    if gguf is None:
        from agents.llm.models import pull

        gguf = pull(args.model, settings.data_dir)
    result = dequantize_gguf(Path(gguf), args.out)
    print(f"wrote {result.folder}: {result.parameters:,} parameters in {result.seconds:.0f} s")
    return 0
