"""``python -m bench analyze insightbench|autofin --system almanac-analysis|one-sql ...``.

``insightbench``: each InsightBench task's goal is analysed on its SQLite database (the judge
reads the answers: ``python -m bench judge insightbench --answers OUT/answers.jsonl ...``).
``autofin``: each long-form AutoFin question of ``--questions`` (``python -m bench.autofin
longform``) is analysed on its AutoFin database with the AutoFin knowledge pack
(:mod:`bench.analysis_runs.autofin`; ``python -m bench.autofin score-longform`` and
``python -m bench judge corgi|bibench|dbqa`` read the answers).

The answers go to ``OUT/answers.jsonl``, the figures to ``OUT/summary.json`` and
``OUT/summary.md``, the run's options to ``OUT/manifest.json``. Rerunning with the same
``--out`` answers only the tasks not yet there.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bench.analysis_runs.systems import SYSTEMS, RunBounds

ANALYZE_HELP = (
    "answer analysis tasks (InsightBench, long-form AutoFin) with the analyst or the one-SQL "
    "baseline"
)


def add_analyze_command(commands: Any) -> None:
    """The ``analyze`` subcommand on ``commands`` (an argparse subparsers object)."""
    analyze = commands.add_parser("analyze", help=ANALYZE_HELP)
    analyze.add_argument("benchmark", choices=["insightbench", "autofin"])
    analyze.add_argument("--system", required=True, choices=SYSTEMS)
    analyze.add_argument("--out", type=Path, required=True, help="output folder")
    analyze.add_argument("--data", type=Path, help="InsightBench folder (default: data root)")
    analyze.add_argument(
        "--cache", type=Path, help="folder of the tasks' SQLite files (default: OUT/databases)"
    )
    analyze.add_argument(
        "--questions", type=Path, help="autofin: the long-form questions (longform.jsonl)"
    )
    analyze.add_argument(
        "--no-worked-examples",
        action="store_true",
        help="autofin: do not store the build's train questions as worked examples",
    )
    analyze.add_argument("--limit", type=int, help="first N tasks")
    analyze.add_argument("--tasks", help="only these task ids, comma-separated (flag-1,flag-7)")
    analyze.add_argument("--max-steps", type=int, default=3, help="sub-questions at most")
    analyze.add_argument(
        "--time-budget-s", type=float, default=120.0, help="wall-time budget of one analysis"
    )
    analyze.add_argument(
        "--ask-deadline-s", type=float, default=60.0, help="deadline of each query's answer"
    )
    analyze.add_argument(
        "--narrative-tokens", type=int, default=700, help="the narrative reply's tokens at most"
    )
    analyze.add_argument(
        "--narrative-reserve-s",
        type=float,
        default=0.0,
        help="seconds of the budget kept for the narrative (no query starts in them)",
    )
    analyze.add_argument(
        "--skip-goal",
        action="store_true",
        help="almanac-analysis: ask only the plan's sub-questions, not the goal itself first",
    )
    analyze.add_argument("--model", help="the model: packaged name or GGUF path")
    analyze.add_argument("--threads", type=int, help="llama.cpp threads")
    analyze.add_argument("--llm-cache", type=Path, help="response cache file (reruns are free)")
    analyze.add_argument(
        "--prompt-cache",
        type=Path,
        help="folder of llama.cpp prompt states, as the server keeps them (a prompt that starts"
        " like an earlier one, e.g. the chain's schema after the planner's prompt, is not"
        " prefilled again)",
    )


def model_options(args: argparse.Namespace) -> dict[str, Any]:
    """The model options the systems are made with (None: the default), as ``almanac``
    takes them."""
    return {k: getattr(args, k) for k in ("model", "threads", "llm_cache", "prompt_cache")}


def analyze_command(args: argparse.Namespace) -> int:
    """Run the parsed command; print the summary."""
    from bench.analysis_runs.autofin import AutoFinAnalysis, LongformRecord, read_longform
    from bench.analysis_runs.rouge import rouge_scores
    from bench.analysis_runs.runner import run_tasks
    from bench.analysis_runs.summary import markdown, summarize, write_summary
    from bench.analysis_runs.systems import AnalysisSystem
    from bench.datasets.insightbench import load_insightbench

    out: Path = args.out
    if args.benchmark == "autofin":
        if args.questions is None:
            raise ValueError("analyze autofin needs --questions (python -m bench.autofin longform)")
        tasks = select_tasks(read_longform(args.questions), args.tasks, args.limit)
    else:
        tasks = load_insightbench(args.data, cache_dir=args.cache or out / "databases")
        tasks = select_tasks(tasks, args.tasks, args.limit)
    bounds = RunBounds(
        max_steps=args.max_steps,
        time_budget_s=args.time_budget_s,
        ask_deadline_s=args.ask_deadline_s,
        narrative_tokens=args.narrative_tokens,
        ask_goal=not args.skip_goal,
        narrative_reserve_s=args.narrative_reserve_s,
    )
    options = model_options(args)
    manifest = {"benchmark": args.benchmark, "system": args.system, "tasks": len(tasks)}
    manifest.update(bounds.__dict__)
    manifest.update({k: str(v) if v is not None else None for k, v in options.items()})
    worked = not args.no_worked_examples
    if args.benchmark == "autofin":
        manifest.update({"questions": str(args.questions), "worked_examples": worked})
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    given = {k: v for k, v in options.items() if v is not None}
    wanted = {task.id for task in tasks}
    if args.benchmark == "autofin":
        system: Any = AutoFinAnalysis(args.system, bounds, worked_examples=worked, **given)
        if tasks and tasks[0].database.is_file():
            system.prepare(tasks[0].database)  # not in the first answer's latency
        ran = run_tasks(tasks, system, out, record_type=LongformRecord)
        records: list[Any] = [r for r in ran if r.task_id in wanted]
        summary = summarize(records)
    else:
        system = AnalysisSystem(args.system, bounds, **given)
        records = [r for r in run_tasks(tasks, system, out) if r.task_id in wanted]
        summary = {**summarize(records), "rouge": rouge_scores(tasks, records)}
    path = write_summary(out, args.system, summary)
    print(markdown(args.system, summary), end="")
    print(f"answers: {out / 'answers.jsonl'}\nsummary: {path}")
    return 0


def select_tasks(tasks: list[Any], ids: str | None, limit: int | None) -> list[Any]:
    """``tasks`` narrowed to ``ids`` (comma-separated; an unknown one is an error), then
    the first ``limit``."""
    if ids:
        wanted = [i.strip() for i in ids.split(",") if i.strip()]
        known = {task.id for task in tasks}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            raise ValueError(f"unknown task ids: {unknown}")
        tasks = [task for task in tasks if task.id in set(wanted)]
    return tasks[:limit] if limit is not None else tasks
