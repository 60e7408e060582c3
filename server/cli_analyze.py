"""``almanac analyze``: a long-form analysis answer from the command line (issue 26).

almanac analyze "QUESTION" [--db URL] [--name NAME] [--user-profile FILE.json]
                [--query-time T] [--max-steps N] [--max-seconds S] [--png-dir DIR] [--json]
    The question is typed; a lookup is answered as ``almanac ask`` answers it; any other is
    planned into sub-questions, each asked through the chain, analysed and written up: the
    short answer, findings citing their evidence (``[q1]``), caveats, findings dropped by the
    number check, and each evidence query's SQL. ``--png-dir`` writes one chart per finding;
    ``--json`` prints the whole analysis. The target is the one ``almanac ask`` uses.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from server.settings import Settings

ANALYZE_COMMAND = "analyze"


def add_analyze_command(commands: Any) -> None:
    command = commands.add_parser(
        ANALYZE_COMMAND, help="analyse a question: plan, queries, findings, charts"
    )
    command.add_argument("question")
    command.add_argument("--db", help="target database URL (default: the last init)")
    command.add_argument("--name", help="its [DATABASE:...] name")
    command.add_argument("--user-profile", type=Path, help="JSON file: the asker's profile")
    command.add_argument("--query-time", help="ISO time the question is asked at")
    command.add_argument("--max-steps", type=int, default=6, help="sub-questions at most")
    command.add_argument("--max-seconds", type=float, default=300.0, help="time budget")
    command.add_argument("--png-dir", type=Path, help="write one PNG chart per finding here")
    command.add_argument("--json", action="store_true", help="print the analysis as JSON")


def run_analyze_command(args: argparse.Namespace, settings: Settings) -> int:
    from agents.analysis.charts import render_png
    from agents.analysis.run import AnalysisOptions
    from agents.pipeline import AskOptions
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.cli_agents import _load_tiers, _pipeline, _query_context, resolve_target
    from server.routes_analyze import analysis_of
    from server.state import configured_indices

    options = AnalysisOptions(max_steps=args.max_steps, max_seconds=args.max_seconds)
    url, name = resolve_target(args, settings)
    context = _query_context(args)
    tiers = _load_tiers(settings)
    with KnowledgeStore(settings.resolved_store_url) as store, Database(url) as database:
        indices = configured_indices(store, settings)
        pipeline = _pipeline(store, database, name, indices, tiers.result(), settings)
        answer = analysis_of(pipeline, args.question, context, AskOptions(), options)
    if args.png_dir is not None:
        args.png_dir.mkdir(parents=True, exist_ok=True)
        for number, finding in enumerate(answer.findings, start=1):
            if finding.chart is not None:
                print(f"chart: {render_png(finding.chart, args.png_dir / f'finding-{number}.png')}")
    print(answer.model_dump_json(indent=2) if args.json else format_analysis(answer))
    return 0 if answer.refused is None else 1


def format_analysis(answer: Any) -> str:
    """The analysis for a terminal."""
    if answer.lookup is not None:
        from server.cli_agents import format_answer

        return format_answer(answer.lookup)
    lines = [f"Q: {answer.question}  ({answer.type})", "", answer.short_answer or "(no answer)"]
    if answer.refused:
        return "\n".join([*lines, f"refused: {answer.refused}"])
    for number, finding in enumerate(answer.findings, start=1):
        lines.append(f"{number}. {finding.text} [{', '.join(finding.evidence)}]")
    lines += [f"caveat: {caveat}" for caveat in answer.caveats]
    lines += [f"dropped ({d.reason}): {d.text}" for d in answer.dropped]
    lines.append("")
    for item in answer.evidence:
        shown = item.sql or f"(no SQL: {item.error})"
        lines.append(f"{item.id} {item.question}\n   {shown}")
    lines.append(f"{answer.sql_calls} SQL calls, {answer.seconds:.1f} s")
    return "\n".join(lines)
