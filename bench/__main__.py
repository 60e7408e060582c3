"""``python -m bench run --dataset NAME --system NAME [--limit N] [--workers K] ...``

``python -m bench analyze insightbench --system almanac-analysis|one-sql --out DIR ...``: the
analyst (or the one-SQL baseline) over InsightBench's tasks (:mod:`bench.analysis_runs`);
``python -m bench analyze autofin --questions DIR/longform.jsonl ...`` over the long-form
AutoFin questions, with the AutoFin knowledge pack.

``python -m bench compare OUT_A OUT_B ... [--out DIR]``: the runs side by side on their common
questions; for streaming runs also their learning curves on one chart (``--out``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.learn.mine.templates import MIN_SUPPORT as TEMPLATE_SUPPORT
from agents.learn.mine.unlabeled import VoteThresholds
from bench.cli_parser import REST_SPLIT, build_parser
from bench.compare import (
    compare_curves,
    compare_runs,
    compare_tiers,
    render_comparison,
    render_curves,
    write_comparison,
)
from bench.datasets import Dataset, Example, load_dataset, require_databases
from bench.learn_split import (
    check_learn_options,
    check_unasked,
    learn_split,
    rest_of,
    revealed_examples,
)
from bench.report import alternative_lines, mean_scores, timeout_line, write_report
from bench.run import MiningSystem, RunConfig, Runner, write_run_manifest
from bench.sampling import asked_ids, shuffled, stratified_ids, stratified_sample
from bench.stream_mining import StreamMiningOptions
from bench.synthesis import synthesis_transforms, write_synthesis
from bench.systems import System, make_system


def run_command(args: argparse.Namespace) -> int:
    options = {"drop_failing_gold": True} if args.drop_failing_gold else {}
    full = load_dataset(args.dataset, **options)
    dataset = full
    check_learn_options(args)
    revealed = revealed_examples(full, args)
    # with --examples-per-db a revealed question is not asked, nor with --exclude-stratified
    # one the named samples ask (both left out before --limit)
    hidden = [e.id for e in revealed] if args.examples_per_db is not None else []
    if args.exclude_stratified:
        hidden += stratified_ids(full.filter(split=args.split), args.exclude_stratified)
    excluded_runs = [str(d) for d in args.exclude_run or []]
    for run_dir in args.exclude_run or []:
        hidden += asked_ids(run_dir)
    if args.split or args.limit is not None or hidden:
        dataset = dataset.filter(split=args.split, limit=args.limit, exclude_ids=hidden)
        if (args.exclude_stratified or excluded_runs) and not dataset.examples:
            named = {"--exclude-stratified": args.exclude_stratified}
            named["--exclude-run"] = excluded_runs
            flags = " ".join(f"{option} {value}" for option, value in named.items() if value)
            raise ValueError(f"{flags} leaves no question to ask")
    if args.stratify:
        dataset = stratified_sample(dataset, args.stratify)
    if args.shuffle is not None:
        dataset = shuffled(dataset, args.shuffle)
    if args.learn_split == REST_SPLIT:
        revealed = rest_of(full, dataset, args.learn_limit)
    check_unasked(revealed, dataset, args)
    needed = Dataset(dataset.name, [*dataset.examples, *revealed], full.databases)
    require_databases(needed, source=Path(args.dataset))  # before any model is loaded
    if args.mine_every and not (args.stream or args.learn_split):
        raise ValueError("--mine-every mines what a stream observes: add --stream or --learn-split")
    if (args.synthesize or args.examples_per_db is not None) and not args.learn_split:
        raise ValueError("--synthesize and --examples-per-db need --learn-split")
    transforms = synthesis_transforms(args.synthesize_transforms)  # a typo stops it here
    system_options = _system_options(args)
    system = make_system(args.system, **system_options)
    if args.mine_every:
        _enable_mining(system, args)
    prepare = getattr(system, "prepare", None)
    if prepare is not None:
        prepare({e.database: e.database_url for e in full.examples if e.database_url})
    label = Path(args.dataset).stem if Path(args.dataset).exists() else args.dataset
    suffix = f"-{args.stream}" if args.stream else ""
    out_dir = args.out or Path("bench/out") / f"{label}-{args.system}{suffix}"
    manifest = {
        "dataset": dataset.name,
        "system": args.system,
        "split": args.split,
        "limit": args.limit,
        "stream": args.stream,
        "learn_split": args.learn_split,
        "stratify": args.stratify,
        "model": args.model,
        "small_model": args.small_model,
        "small_temperature": args.small_temperature,
        "small_max_tokens": args.small_max_tokens,
        "sliced_schema": args.sliced_schema,
        "questions": len(dataset),
    }
    if args.data_dictionary:  # only then: earlier runs' manifests stay valid for resuming
        manifest["data_dictionary"] = True
    if args.llm_timeout is not None:  # only when given, as above
        manifest["llm_timeout"] = args.llm_timeout
    drawn = ("sequences", "small_samples", "calibrator", "adaptive_target", "escalation_target")
    for key in (*drawn, "repair_all"):
        if key in system_options:  # only when given, as above
            manifest[key] = str(system_options[key]) if key == "calibrator" else system_options[key]
    if args.examples_per_db is not None:  # only then, as below
        manifest["examples_per_db"] = args.examples_per_db
    if args.synthesize:
        manifest["synthesize"] = args.synthesize
        manifest["synthesize_per_source"] = args.synthesize_per_source
    if args.cot:  # only then, as above
        manifest["cot"] = {"limit": args.cot_limit}
        if args.cot_scope != "all":  # only then, as above
            manifest["cot"]["scope"] = args.cot_scope
        if args.cot_with_knowledge:  # only then, as above
            manifest["cot"]["knowledge"] = True
    if args.mine_every:  # only then: earlier runs' manifests stay valid for resuming
        manifest["mine_every"] = args.mine_every
        manifest["mine_gate"] = (
            {"held": args.mine_gate_held, "batch": args.mine_gate_batch} if args.mine_gate else None
        )
        if args.stream == "unlabeled" or args.learn_unlabeled:
            manifest["mine_vote_samples"] = args.mine_vote_samples
        if args.mine_template_support is not None:  # only then, as above
            manifest["mine_template_support"] = args.mine_template_support
        if args.mine_llm_pairer:  # only then, as above
            manifest["mine_llm_pairer"] = True
    if args.learn_unlabeled:  # only then, as above
        manifest["learn_unlabeled"] = True
    if args.learn_limit is not None:
        manifest["learn_limit"] = args.learn_limit
    if args.shuffle is not None:  # only then, as below
        manifest["shuffle"] = args.shuffle
    if args.exclude_stratified:  # only then, as above
        manifest["exclude_stratified"] = sorted(args.exclude_stratified)
    if excluded_runs:  # only then, as above
        manifest["exclude_run"] = excluded_runs
    if args.learn_split == REST_SPLIT:  # since same-SQL paraphrases are held back
        manifest["rest"] = "the questions not asked, without same-SQL paraphrases of the asked"
    if args.no_knowledge_pack:
        manifest["knowledge_pack"] = False
    if args.mined_by_facet:  # only then, as above
        manifest["mined_by_facet"] = True
    if args.knowledge:  # only then, as above
        manifest["knowledge"] = [str(p) for p in args.knowledge]
    write_run_manifest(out_dir, manifest, fresh=args.fresh)
    if args.learn_split:
        learn_split(system, revealed, args, out_dir)
    if args.synthesize:
        databases = {e.database for e in dataset.examples}
        _synthesize(system, args, out_dir, databases, transforms)
    if args.cot:
        _profile_cot(system, args, out_dir, dataset.examples)
    config = RunConfig(
        out_dir=out_dir,
        workers=args.workers,
        timeout_s=args.timeout,
        sql_timeout_s=args.sql_timeout,
        stream=args.stream,
        mine_every=args.mine_every if args.stream else 0,
    )
    results = Runner(dataset, system, config).run()
    report = write_report(
        results,
        out_dir,
        title=f"{args.system} on {dataset.name}",
        streaming=args.stream is not None,
    )
    scores = mean_scores(results)
    scored = sum(r.scored for r in results)
    print(
        f"{args.system} on {dataset.name}: {scored}/{len(results)} scored  "
        + "  ".join(f"{k}={v:.4f}" for k, v in scores.items())
    )
    timeouts = timeout_line(results)
    if timeouts:
        print(timeouts)
    for line in alternative_lines(results):
        print(line)
    print(f"report: {report}")
    return 0


def _enable_mining(system: System, args: argparse.Namespace) -> None:
    enable = getattr(system, "enable_mining", None)
    if enable is None or not isinstance(system, MiningSystem):
        raise ValueError(f"system {args.system!r} does not mine (--mine-every)")
    enable(
        StreamMiningOptions(
            every=args.mine_every,
            gate=args.mine_gate,
            gate_held=args.mine_gate_held,
            gate_batch=args.mine_gate_batch,
            template_support=(
                TEMPLATE_SUPPORT
                if args.mine_template_support is None
                else args.mine_template_support
            ),
            llm_pairer=args.mine_llm_pairer,
            vote=VoteThresholds(
                samples=args.mine_vote_samples, min_ran=min(3, args.mine_vote_samples)
            ),
        )
    )


def _synthesize(
    system: System,
    args: argparse.Namespace,
    out_dir: Path,
    databases: set[str],
    transforms: tuple[str, ...],
) -> None:
    """Synthesize up to ``--synthesize`` pairs by ``transforms`` from what ``--learn-split``
    revealed about ``databases`` (those of the questions answered)."""
    synthesize = getattr(system, "synthesize", None)
    if synthesize is None:
        raise ValueError(f"system {args.system!r} does not synthesize (--synthesize)")
    reports = synthesize(
        args.synthesize,
        per_source=args.synthesize_per_source,
        databases=databases,
        transforms=transforms,
    )
    totals = write_synthesis(out_dir, reports)
    print(
        "synthesis: "
        + ", ".join(f"{k} {v}" for k, v in totals.items())
        + f" ({len(reports)} databases)"
    )


def _profile_cot(
    system: System, args: argparse.Namespace, out_dir: Path, asked: Sequence[Example]
) -> None:
    """Explain the labeled experiences with checked CoT (``--cot``; with ``--cot-scope
    asked`` only the examples the ``asked`` questions retrieve), report in
    ``cot_report.json``."""
    profile = getattr(system, "profile_cot", None)
    if profile is None:
        raise ValueError(f"system {args.system!r} does not show CoT (--cot)")
    report = profile(
        limit=args.cot_limit,
        asked=asked if args.cot_scope == "asked" else None,
        with_knowledge=args.cot_with_knowledge,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    data = json.dumps(report.to_dict(), indent=2, sort_keys=True)
    (out_dir / "cot_report.json").write_text(data + "\n")
    print(report.summary())


def _system_options(args: argparse.Namespace) -> dict[str, object]:
    keys = (
        "model",
        "small_model",
        "small_temperature",
        "small_max_tokens",
        "small_samples",
        "llm_cache",
        "threads",
        "sequences",
        "prompt_cache",
        "calibrator",
        "adaptive_target",
        "escalation_target",
    )
    options = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    options["llm_timeout"] = args.timeout if args.llm_timeout is None else args.llm_timeout
    if args.sliced_schema:
        options["sliced_schema"] = True
    if args.data_dictionary:
        options["data_dictionary"] = True
    if args.no_knowledge_pack:
        options["knowledge_pack"] = False
    if args.mined_by_facet:
        options["mined_by_facet"] = True
    if args.knowledge:
        options["knowledge"] = [str(p) for p in args.knowledge]
    if args.cot:
        options["cot"] = True
    if args.repair_all:
        options["repair_all"] = True
    return options


def compare_command(args: argparse.Namespace) -> int:
    ids, table = compare_runs(args.runs)
    print(render_comparison(ids, table))
    tiers = compare_tiers(args.runs, ids)
    if tiers is not None:
        print(f"\n{tiers}")
    if args.out is not None:
        path = write_comparison(args.runs, args.out, args.window)
        count, curves = compare_curves(args.runs, args.window)
        print(render_curves(count, curves))
        print(f"comparison: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # faiss logs each CPU build it probes (AVX512, AVX2) with a ModuleNotFoundError at INFO
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)
    try:
        if args.command == "judge":
            from bench.judge.__main__ import judge_command

            return judge_command(args)
        if args.command == "analyze":
            from bench.analysis_runs.cli import analyze_command

            return analyze_command(args)
        if args.command == "compare":
            return compare_command(args)
        return run_command(args)
    except (KeyError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
