"""``almanac distill``: training data, training, export, base weights and evaluation.

almanac distill data --out DIR [--db URL] [--name NAME] [--validation-share F]
                     [--validation-db NAME ...] [--min-score S] [--tokenizer MODEL_DIR]
    NL-CoT-SQL tuples from the verified experiences of the target database (human, mined,
    synthetic), each with the prompt ``ask`` sends (:mod:`distill.dataset`), split by
    database and SQL skeleton, curated; writes train.jsonl, validation.jsonl, manifest.json
    (token lengths counted with ``--tokenizer`` when given) and prints the manifest.
almanac distill train CONFIG [--no-resume] [--max-steps N] [--device auto|cpu|cuda]
    Fine-tunes as the YAML/TOML config says (:mod:`distill.config`), resuming from the run's
    last checkpoint; prints one line per step (loss, ETA) and the result as JSON.
almanac distill export ADAPTER --base MODEL_DIR --out DIR [--dtype f16|f32] [--quantize Q]
                       [--register NAME] [--replace]
    Merges the run's adapter (``RUN/final`` or a checkpoint) into the base and writes
    ``DIR/hf`` and ``DIR/student.gguf`` (:mod:`distill.export`; ``--quantize q4_k_m`` as the
    packaged models are, :mod:`distill.quantize`); an adapter of a training run
    records the GGUF in ``RUN/export.json`` for ``eval`` (and, with ``--register``, registers
    it as ``register`` does: a student of that name is replaced only with ``--replace``).
almanac distill register RUN [--name NAME] [--gguf FILE] [--replace] [--link]
    Copies the run's exported GGUF into ``<data_dir>/models/students/NAME`` with a manifest
    (sha256, base model, run, dataset manifest hash, created) (:mod:`distill.registry`): a
    tier ``backend = "student"``, ``model = "NAME"`` serves it. NAME defaults to the run
    directory's name.
almanac distill list [--verify]
    The registered students (``--verify``: hash every file against its manifest).
almanac distill base --out DIR [--gguf FILE | --model NAME]
    The base model's Hugging Face weights, dequantized from the packaged GGUF
    (:mod:`distill.base_weights`; default the test model, qwen2.5-coder-0.5b); records the
    source in ``DIR/almanac-source.json`` (``eval`` compares the student with it).
almanac distill eval RUN --dataset D [--split S] [--limit N] [--stratify N] [--learn-split S]
                     [--drop-failing-gold] [--system almanac] [--base-model NAME|GGUF]
                     [--base-out DIR] [--gguf FILE] [--out DIR] [--threads T] [--timeout S]
    ``python -m bench run`` over the same questions with the base model and with the run's
    student GGUF (same chain, same prompts), then ``bench compare``: prints EX, soft-F1 and
    BF-β of both and the delta; writes ``RUN/eval/<sample>/`` (``base/``, ``student/``,
    ``comparison.md``, ``eval.json``) or ``--out``. ``--base-out`` reuses (or resumes) a base
    run over the same sample (:mod:`bench.distill_eval`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from distill.quantize import QUANT_TYPES
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
    export.add_argument(
        "--quantize",
        choices=sorted(QUANT_TYPES),
        help="quantise the GGUF with llama.cpp (the packaged models are q4_k_m)",
    )
    export.add_argument("--register", metavar="NAME", help="register the student as NAME")
    export.add_argument("--replace", action="store_true", help="--register: overwrite NAME")
    register = actions.add_parser("register", help="register a run's student for a tier")
    register.add_argument("run", type=Path, help="training run directory (exported)")
    register.add_argument("--name", help="student name (default: the run directory's name)")
    register.add_argument("--gguf", type=Path, help="the GGUF (default: the run's export)")
    register.add_argument("--replace", action="store_true", help="overwrite a student")
    register.add_argument("--link", action="store_true", help="hard-link instead of copying")
    listing = actions.add_parser("list", help="the registered students")
    listing.add_argument("--verify", action="store_true", help="hash each GGUF again")
    base = actions.add_parser("base", help="dequantize a packaged GGUF into HF weights")
    base.add_argument("--out", type=Path, required=True)
    base.add_argument("--gguf", type=Path, help="a GGUF file (default: a packaged model)")
    base.add_argument("--model", default="qwen2.5-coder-0.5b", help="packaged model name")
    _add_eval(actions)


def _add_eval(actions: Any) -> None:
    evaluate = actions.add_parser("eval", help="bench the student against its base model")
    evaluate.add_argument("run", type=Path, help="training run directory (exported)")
    evaluate.add_argument("--dataset", required=True, help="spider_dev, geoquery, or a path")
    evaluate.add_argument("--split", help="keep only this split")
    evaluate.add_argument("--limit", type=int, help="first N questions")
    evaluate.add_argument("--stratify", type=int, metavar="N", help="stratified sample of N")
    evaluate.add_argument("--learn-split", help="reveal this split's gold SQL first (train)")
    evaluate.add_argument("--drop-failing-gold", action="store_true")
    evaluate.add_argument("--system", default="almanac", help="bench system (the chain)")
    evaluate.add_argument("--base-model", help="packaged name or GGUF (default: the run's)")
    evaluate.add_argument("--base-out", type=Path, help="a base bench run to reuse or resume")
    evaluate.add_argument("--gguf", type=Path, help="the student GGUF (default: the run's)")
    evaluate.add_argument("--out", type=Path, help="default RUN/eval/<sample>")
    evaluate.add_argument("--threads", type=int, help="llama.cpp threads")
    evaluate.add_argument("--timeout", type=float, help="seconds per question (bench: 120)")


def run_distill_command(args: argparse.Namespace, settings: Settings) -> int:
    from distill.checkpoints import CorruptCheckpointError
    from distill.registry import StudentError
    from distill.train import DeviceMissingError

    handlers = {
        "data": _data,
        "train": _train,
        "export": _export,
        "register": _register,
        "list": _list,
        "base": _base,
        "eval": _eval,
    }
    try:
        return handlers[args.distill_action](args, settings)
    except (DeviceMissingError, CorruptCheckpointError, StudentError) as exc:
        print(f"error: {exc}")
        return 2


def _data(args: argparse.Namespace, settings: Settings) -> int:
    from distill.curation import CurationWeights
    from distill.dataset import DatasetOptions, build_dataset
    from distill.split import SplitRule
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.cli_agents import resolve_target
    from server.state import configured_indices

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
            retriever = configured_indices(store, settings).retriever()
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
    print(json.dumps(result.summary(), indent=2))
    return 0


def _export(args: argparse.Namespace, settings: Settings) -> int:
    from distill.eval_inputs import STUDENT_FILE, record_export, run_of_adapter
    from distill.export import export

    # the GGUF writer writes in place: a new file, not the old one's bytes, which a student
    # registered with --link shares (and a server may have mapped)
    (args.out / STUDENT_FILE).unlink(missing_ok=True)
    path = export(args.adapter, args.base, args.out, dtype=args.dtype, quantize=args.quantize)
    print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB) and {args.out / 'hf'}")
    run = run_of_adapter(args.adapter)
    if run is not None:
        kind = args.quantize or args.dtype
        print(f"recorded in {record_export(run, path, adapter=args.adapter, dtype=kind)}")
    if args.register:
        from distill.registry import register

        student = register(
            run or args.adapter.parent,
            settings.data_dir,
            name=args.register,
            gguf=path,
            replace=args.replace,
        )
        print(f"registered student {student.name!r}: {student.gguf}")
    return 0


def _register(args: argparse.Namespace, settings: Settings) -> int:
    from distill.registry import register

    student = register(
        args.run,
        settings.data_dir,
        name=args.name,
        gguf=args.gguf,
        replace=args.replace,
        link=args.link,
    )
    print(json.dumps(student.manifest, indent=2))
    print(f"registered student {student.name!r}: {student.gguf}")
    print(f'serve it with a tier: backend = "student", model = "{student.name}"')
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    from distill.registry import StudentError, list_students, verified_student

    students = list_students(settings.data_dir)
    if not students:
        print(f"no students registered in {settings.data_dir / 'models' / 'students'}")
        return 0
    failed = 0
    for student in students:
        if student.error is not None:
            print(f"{student.name:<24} UNREADABLE: {student.error}")
            failed += 1
            continue
        row = student.row()
        state = ""
        if args.verify:
            try:
                verified_student(settings.data_dir, student.name)
                state = "  verified"
            except StudentError as exc:
                state, failed = f"  CORRUPT: {exc}", failed + 1
        print(
            f"{row['name']:<24} {row['size_mb']:>9.1f} MB  sha256 {row['sha256']}  "
            f"base {row['base']}  run {row['run']}  {row['created_at']}  {row['path']}{state}"
        )
    return 1 if failed else 0


def _base(args: argparse.Namespace, settings: Settings) -> int:
    from distill.base_weights import dequantize_gguf
    from distill.eval_inputs import record_base_source

    gguf, model = args.gguf, None
    if gguf is None:
        from agents.llm.models import pull

        gguf, model = pull(args.model, settings.data_dir), args.model
    result = dequantize_gguf(Path(gguf), args.out)
    record_base_source(result.folder, model=model, gguf=Path(gguf))
    print(f"wrote {result.folder}: {result.parameters:,} parameters in {result.seconds:.0f} s")
    return 0


def _eval(args: argparse.Namespace, settings: Settings) -> int:
    from bench.distill_eval import BenchOptions, evaluate, render
    from distill.eval_inputs import Sample

    sample = Sample(
        dataset=args.dataset,
        split=args.split,
        limit=args.limit,
        stratify=args.stratify,
        learn_split=args.learn_split,
        drop_failing_gold=args.drop_failing_gold,
    )
    bench = BenchOptions(system=args.system, threads=args.threads, timeout_s=args.timeout)

    def on_progress(phase: str, done: int, total: int) -> None:
        if done in (0, total):
            print(f"{phase}: {done}/{total} questions answered", flush=True)

    result = evaluate(
        args.run,
        sample,
        bench=bench,
        out_dir=args.out,
        base_out=args.base_out,
        base_model=args.base_model,
        student=args.gguf,
        on_progress=on_progress,
    )
    if result.base_reused:
        print(f"base: reused {result.base_out}")
    print(render(result))
    print(f"eval: {result.out_dir / 'eval.json'}")
    return 0
