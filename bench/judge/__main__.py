"""``python -m bench.judge PROTOCOL --answers FILE.jsonl --out DIR [judge options]``.

``insightbench``: insight answers (``task_id``, ``insights``, ``summary``) against the
InsightBench ground truth; ``corgi``, ``bibench``, ``dbqa``: analysis answers (see
:mod:`bench.judge.answers`). Writes ``scores.json``, ``judge.jsonl`` (every judge prompt and
reply) and ``report.md`` into ``--out``. The judge is the embedded model ``--model`` (a
packaged name or a GGUF path; the default model otherwise), or the OpenAI-compatible endpoint
``--judge-url`` serving ``--judge-model`` (key from ``$OPENAI_API_KEY`` when set).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from agents.llm.base import LLM
from bench.judge import bibench, corgi, dbqa, insightbench
from bench.judge.answers import read_analysis_answers, read_insight_answers
from bench.judge.core import JudgeLog
from bench.judge.report import markdown, write_results

PROTOCOLS = ("insightbench", "corgi", "bibench", "dbqa")


def parser() -> argparse.ArgumentParser:
    """The command line (also usable as a subcommand of ``python -m bench``)."""
    top = argparse.ArgumentParser(prog="python -m bench.judge")
    add_protocols(top)
    return top


def add_protocols(parser: argparse.ArgumentParser) -> None:
    """One subcommand per protocol on ``parser``."""
    commands = parser.add_subparsers(dest="protocol", required=True)
    for name in PROTOCOLS:
        command = commands.add_parser(name, help=f"score answers by the {name} protocol")
        command.add_argument("--answers", type=Path, required=True, help="answers, JSON lines")
        command.add_argument("--out", type=Path, required=True, help="folder for the results")
        command.add_argument("--model", help="embedded judge model: a packaged name or a GGUF")
        command.add_argument("--judge-url", help="OpenAI-compatible judge endpoint")
        command.add_argument("--judge-model", help="the endpoint's model name")
        command.add_argument("--llm-cache", type=Path, help="response cache file (embedded)")
        command.add_argument(
            "--threads",
            type=int,
            help="llama.cpp threads (embedded; default: llama.cpp's, half the cores to decode)",
        )
        command.add_argument(
            "--prompt-cache",
            type=Path,
            help="folder of llama.cpp prompt states (embedded): a judge prompt that starts like "
            "an earlier one (BI-Bench's schema) is not prefilled again",
        )
        command.add_argument("--limit", type=int, help="first N tasks or answers")
        if name == "insightbench":
            command.add_argument("--data", type=Path, help="InsightBench folder")
            command.add_argument(
                "--cache",
                type=Path,
                help="folder for the tasks' SQLite files (default: OUT/databases)",
            )
            command.add_argument(
                "--top-k", type=int, help="judge each ground truth against its K best by ROUGE-1"
            )
        else:
            command.add_argument(
                "--database", type=Path, help="SQLite file for answers that name none"
            )


def make_judge(args: argparse.Namespace) -> LLM:
    """The judge the options name."""
    if args.judge_url:
        if not args.judge_model:
            raise SystemExit("--judge-url needs --judge-model")
        from agents.llm.openai_compat import OpenAICompatibleLLM

        key = os.environ.get("OPENAI_API_KEY", "not-needed")
        return OpenAICompatibleLLM(args.judge_url, args.judge_model, key, timeout=180.0)
    from agents.llm.models import DEFAULT_MODEL
    from bench.agent_workspace import ModelChoice, load_llm

    choice = ModelChoice(
        llm_cache=args.llm_cache, threads=args.threads, prompt_cache=args.prompt_cache
    )
    return load_llm(args.model or DEFAULT_MODEL, choice)


def run(args: argparse.Namespace, judge: LLM) -> dict[str, Any]:
    """Score the answers with ``judge``; write the results; the summary."""
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    (out / "judge.jsonl").unlink(missing_ok=True)
    with JudgeLog(out / "judge.jsonl") as judge_log:
        if args.protocol == "insightbench":
            from bench.datasets.insightbench import load_insightbench

            tasks = load_insightbench(
                args.data, cache_dir=args.cache or out / "databases", limit=args.limit
            )
            by_task = {a.task_id: a for a in read_insight_answers(args.answers)}
            items: list[Any] = [
                insightbench.score_task(t, by_task.get(t.id), judge, judge_log, top_k=args.top_k)
                for t in tqdm(tasks, desc="insightbench", unit="task")
            ]
            summary = insightbench.aggregate(items)
        else:
            module: Any = {"corgi": corgi, "bibench": bibench, "dbqa": dbqa}[args.protocol]
            answers = read_analysis_answers(args.answers)[: args.limit]
            if args.database is not None:
                answers = [a if a.database else replace(a, database=args.database) for a in answers]
            items = [
                module.score_answer(a, judge, judge_log)
                for a in tqdm(answers, desc=args.protocol, unit="answer")
            ]
            summary = module.aggregate(items)
    write_results(out, args.protocol, judge.name, summary, items)
    return summary


def judge_command(args: argparse.Namespace) -> int:
    """Run the parsed command: the report on stdout and 0, or the error on stderr and 2."""
    try:
        judge = make_judge(args)
        summary = run(args, judge)
    except (ValueError, FileNotFoundError) as exc:  # DatasetFormatError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(args.protocol, judge.name, summary))
    return 0


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # its CPU probes, at INFO
    return judge_command(parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
