"""Command line: ``python -m bench.autofin --out DIR [--seed N] [--pg-url URL]``.

Writes the AutoFin database (SQLite, and PostgreSQL when a URL is given), its planted facts,
knowledge pack, user profiles and labeled questions, then prints the time of each step.

Two more commands work on a build:

- ``python -m bench.autofin longform --out DIR [--file FILE]``: the long-form questions of
  the build in DIR (:mod:`bench.autofin.longform`), by default to ``DIR/longform.jsonl``;
- ``python -m bench.autofin score-longform --questions Q --answers A [--json OUT]``: the share
  of planted facts analysis answers name, per question type (:mod:`bench.autofin.longform_score`).
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from bench.autofin.longform import write_longform
from bench.autofin.longform_score import main as score_main
from bench.autofin.pipeline import Summary, generate


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.autofin",
        description="Generate the AutoFin finance database, knowledge pack and questions.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output folder")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--pg-url", help="also load the tables into this PostgreSQL database")
    parser.add_argument("--questions", type=int, default=480, help="how many questions")
    parser.add_argument("--quiet", action="store_true", help="no progress bars, warnings only")
    return parser.parse_args(argv)


def report(summary: Summary) -> str:
    lines = [f"AutoFin (seed {summary.seed}) written to {summary.out}"]
    for step, seconds in summary.timings.items():
        lines.append(f"  {step:<12} {seconds:7.2f} s")
    lines.append(f"  {'total':<12} {summary.total_seconds:7.2f} s  (without PostgreSQL)")
    manifest = summary.manifest
    tables = manifest["tables"]
    rows = sum(t["rows"] for t in tables.values())
    widest = max(tables.items(), key=lambda item: (item[1]["columns"], item[1]["rows"]))
    lines.append(
        f"  tables: {len(tables)}, {rows:,} rows; widest {widest[0]} "
        f"{widest[1]['rows']:,} x {widest[1]['columns']}"
    )
    knowledge = manifest["knowledge"]
    lines.append(f"  knowledge entries: {sum(knowledge.values())} {knowledge}")
    questions = manifest["questions"]
    lines.append(f"  questions: {questions['total']} {questions['splits']}")
    lines.append(f"  traits: {questions['traits']}")
    lines.append(f"  difficulty: {questions['difficulty']}")
    return "\n".join(lines)


def longform_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.autofin longform",
        description="Write the long-form questions of an AutoFin build (from its planted.json).",
    )
    parser.add_argument("--out", type=Path, required=True, help="the AutoFin build's folder")
    parser.add_argument("--file", type=Path, help="where to write (default OUT/longform.jsonl)")
    args = parser.parse_args(argv)
    path = write_longform(args.out, args.file)
    count = len(path.read_text(encoding="utf-8").splitlines())
    print(f"{count} long-form questions written to {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "longform":
        return longform_main(argv[1:])
    if argv and argv[0] == "score-longform":
        return score_main(argv[1:])
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # its INFO probing is noise
    summary = generate(
        args.out,
        seed=args.seed,
        pg_url=args.pg_url,
        question_count=args.questions,
        progress=not args.quiet,
    )
    print(report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
