"""The facts of an analysis run computed again from its stored evidence, with today's tools.

    python -m bench.analysis_runs.refacts --answers OUT/answers.jsonl --out NEW.jsonl
        [--insightbench [--data DIR] [--cache DIR]]

An analysis answer keeps its evidence (each sub-question's SQL and rows), so a change to the
analysis tools (:mod:`agents.analysis.compute`) can be measured without a model call: every
answer whose findings were the computed facts (``narrative_by == "facts"``) gets the facts
of the current tools and their findings (:func:`agents.analysis.narrative.fact_findings`);
its short answer, when it was its first finding, becomes the new first finding. Answers the
model narrated are left as they are (their text came from the facts of the run's own
version; writing them again takes the model). ``--insightbench`` prints ROUGE-1 of both
files against InsightBench's ground truth (:mod:`bench.analysis_runs.rouge`); the new file
is read by ``python -m bench judge`` like any answers file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from agents.analysis.compute import compute_facts, facts_payload
from agents.analysis.models import Evidence
from agents.analysis.narrative import chart_findings, fact_findings
from bench.analysis_runs.records import TaskRecord, read_records


def refacted(record: TaskRecord) -> TaskRecord | None:
    """``record`` with its facts and fact findings computed again (None: not narrated from
    the facts, or no fact comes out of its evidence now)."""
    analysis = record.analysis or {}
    if analysis.get("narrative_by") != "facts":
        return None
    evidence = [Evidence.model_validate(e) for e in analysis.get("evidence", [])]
    facts, _ = compute_facts(evidence, str(analysis.get("type", "descriptive")))
    findings = fact_findings(facts)
    if not findings:
        return None
    chart_findings(findings, {e.id: e for e in evidence})
    texts = [f.text for f in findings]
    short = record.summary
    if not record.insights or record.summary == record.insights[0]:
        short = texts[0]
    new = dict(analysis)
    new["facts"] = facts_payload(facts)
    new["findings"] = [f.model_dump(mode="json") for f in findings]
    new["short_answer"] = short
    return record.model_copy(update={"insights": texts, "summary": short, "analysis": new})


def refact_all(records: Sequence[TaskRecord]) -> tuple[list[TaskRecord], int]:
    """Every record, those narrated from facts computed again, and how many were."""
    out, changed = [], 0
    for record in records:
        new = refacted(record)
        changed += new is not None
        out.append(new or record)
    return out, changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.analysis_runs.refacts",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--answers", type=Path, required=True, help="a run's answers.jsonl")
    parser.add_argument("--out", type=Path, required=True, help="the answers file to write")
    parser.add_argument("--insightbench", action="store_true", help="print ROUGE-1 of both")
    parser.add_argument("--data", type=Path, help="InsightBench folder (default: data root)")
    parser.add_argument(
        "--cache", type=Path, help="the tasks' SQLite folder (default: beside --out)"
    )
    args = parser.parse_args(argv)
    if args.out.resolve() == args.answers.resolve():
        print("error: --out must not be the --answers file", file=sys.stderr)
        return 2
    if not args.answers.is_file():
        print(f"error: no answers file {args.answers}", file=sys.stderr)
        return 2
    try:
        records = read_records(args.answers)
    except (OSError, ValueError) as exc:
        print(f"error: {args.answers}: {exc}", file=sys.stderr)
        return 2
    new, changed = refact_all(records)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(r.model_dump_json() + "\n" for r in new), encoding="utf-8")
    print(f"{changed} of {len(records)} answers narrated from facts computed again -> {args.out}")
    if args.insightbench:
        from bench.analysis_runs.rouge import rouge_scores
        from bench.datasets.insightbench import load_insightbench

        cache = args.cache or args.out.parent / "databases"
        tasks = load_insightbench(args.data, cache_dir=cache)
        for name, rows in (("before", records), ("after", new)):
            print(f"ROUGE-1 {name}: {rouge_scores(tasks, rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
