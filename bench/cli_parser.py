"""The command line of ``python -m bench``: its subcommands and their options."""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.analysis_runs.cli import add_analyze_command
from bench.judge.__main__ import add_protocols
from bench.systems import system_names

REST_SPLIT = "rest"  # --learn-split: the questions not asked

MINING_HELP = """\
mining in the stream (almanac systems; issue 22). The two GeoQuery measurements:
  the prequential curve (EX of the first 50 questions against the last 100):
    python -m bench run --dataset geoquery --system almanac --drop-failing-gold --split train
      --stream labeled --mine-every 25 --out bench/out/geo-stream-mine
    (and without --mine-every into another --out; then
     python -m bench compare bench/out/geo-stream bench/out/geo-stream-mine --out DIR)
  mining against the same experiences without mining:
    python -m bench run --dataset geoquery --system almanac --drop-failing-gold
      --learn-split train --split test --stratify 150 --mine-every 25 --out bench/out/geo-mine
    (--learn-split reveals the train questions, then mines them once; the test questions
     are then answered in order, mining every 25 only with --stream labeled)
The AutoFin measurements (the test questions after nothing, after the train questions
without their SQL, after them with their SQL and without the knowledge pack; add
--learn-limit K to reveal only the first K train questions, a 5-vote each costs minutes):
  no stream:
    python -m bench run --dataset bench/out/autofin-data/questions.jsonl --system almanac
      --split test --stratify 60 --out bench/out/autofin-none
  unlabeled train questions, mined by the vote:
    python -m bench run --dataset bench/out/autofin-data/questions.jsonl --system almanac
      --split test --stratify 60 --learn-split train --learn-unlabeled --mine-every 25
      --mine-vote-samples 5 --out bench/out/autofin-unlabeled-mine
  labeled train questions without the knowledge pack, without and with mining (and with the
  pack: leave --no-knowledge-pack out):
    python -m bench run --dataset bench/out/autofin-data/questions.jsonl --system almanac
      --split test --stratify 60 --learn-split train --no-knowledge-pack
      --out bench/out/autofin-nopack
    python -m bench run --dataset bench/out/autofin-data/questions.jsonl --system almanac
      --split test --stratify 60 --learn-split train --no-knowledge-pack --mine-every 25
      --out bench/out/autofin-nopack-mine"""


def build_parser() -> argparse.ArgumentParser:
    """``python -m bench``'s arguments: ``run``, ``compare``, ``judge`` and ``analyze``."""
    parser = argparse.ArgumentParser(prog="python -m bench")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="run a system over a dataset and write a report",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # the mining group's examples
    )
    run.add_argument("--dataset", required=True, help="spider_dev, geoquery, or a path")
    run.add_argument("--system", required=True, help=f"one of {system_names()}")
    run.add_argument("--split", help="keep only this split")
    run.add_argument("--limit", type=int, help="first N questions")
    run.add_argument("--workers", type=int, default=1)
    run.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds per predict: a question not answered by then is scored as timed out (its"
        " late answer discarded); a started predict cannot be stopped, so the run waits for it"
        " to end and the summary and report say how many ran over and by how much",
    )
    run.add_argument("--sql-timeout", type=float, default=30.0, help="seconds per query")
    run.add_argument(
        "--stream",
        choices=["labeled", "unlabeled"],
        help="lifelong-learning mode: in order, learning after each question",
    )
    run.add_argument(
        "--drop-failing-gold",
        action="store_true",
        help="leave out questions whose gold SQL fails (GeoQuery has 5)",
    )
    run.add_argument(
        "--learn-split",
        help="first reveal this split's questions and gold SQL to the system (no predictions),"
        f" e.g. train; combine with --split test; {REST_SPLIT!r}: every question of the"
        " databases asked about that is not asked itself (Spider dev: --stratify 120"
        f" --learn-split {REST_SPLIT})",
    )
    run.add_argument(
        "--learn-unlabeled",
        action="store_true",
        help="with --learn-split: reveal the questions without their gold SQL, learned as an"
        " unlabeled stream's are: with --mine-every (required) mined once by the vote of"
        " --mine-vote-samples candidates, only the questions it agrees on, as trust"
        " 'unlabeled'",
    )
    run.add_argument(
        "--learn-limit",
        type=int,
        metavar="K",
        help="with --learn-split: reveal only its first K questions (source order; AutoFin's"
        " is seeded), to size a run",
    )
    run.add_argument(
        "--no-knowledge-pack",
        action="store_true",
        help="LLM systems: do not import the knowledge pack (knowledge.jsonl) lying beside a"
        " database (AutoFin's), e.g. to measure what mining recovers of its gain",
    )
    run.add_argument(
        "--knowledge",
        type=Path,
        action="append",
        metavar="FILE",
        help="LLM systems: import this UKF JSONL into the knowledge base after the first database"
        " is profiled (repeatable), e.g. knowledge extracted from documents"
        " (python -m bench.extract_documents --export FILE) with --no-knowledge-pack",
    )
    run.add_argument(
        "--mined-by-facet",
        action="store_true",
        help="LLM systems: show in prompts the mined business knowledge that only the database"
        " facet reaches (nothing in the question points to it; RetrievalOptions.mined_by_facet,"
        " left out by default since it cost Spider EX)",
    )
    run.add_argument(
        "--shuffle",
        type=int,
        metavar="SEED",
        help="ask the questions in a seeded random order (a stream that does not follow the"
        " file's grouping of question templates: GeoQuery lists its rare compound questions last)",
    )
    run.add_argument(
        "--stratify",
        type=int,
        metavar="N",
        help="a stratified sample of N questions (by difficulty, then database), seeded",
    )
    run.add_argument(
        "--exclude-stratified",
        type=int,
        action="append",
        metavar="N",
        help="leave out the questions --stratify N asks (of the same split; repeatable) before"
        " sampling: questions the packaged calibrator, fitted on those samples, has never seen"
        " (--stratify 150 --exclude-stratified 300)",
    )
    run.add_argument(
        "--exclude-run",
        type=Path,
        action="append",
        metavar="DIR",
        help="leave out the questions a recorded run (DIR/results.jsonl) asked (repeatable):"
        " after a calibrator is fitted on runs, measure it on questions none of them asked",
    )
    run.add_argument(
        "--data-dictionary",
        action="store_true",
        help="apply the data dictionary a benchmark ships (Spider's tables.json: natural"
        " table and column names) to each database's knowledge base (kb.dictionary)",
    )
    models = run.add_argument_group("LLM systems")
    models.add_argument(
        "--model",
        help="default model: packaged name, GGUF path, or openai:NAME@URL (a model an "
        "OpenAI-compatible server serves: vLLM, the llama.cpp server, Ollama)",
    )
    models.add_argument("--small-model", help="small cascade tier: packaged name or GGUF path")
    models.add_argument(
        "--small-temperature", type=float, help="sampling temperature of the small cascade tier"
    )
    models.add_argument(
        "--small-max-tokens", type=int, help="completion budget of the small cascade tier"
    )
    models.add_argument(
        "--small-samples",
        type=int,
        help="samples the small cascade tier draws at most (default 2; it answers once two agree)",
    )
    models.add_argument(
        "--sliced-schema",
        action="store_true",
        help="almanac systems: a schema slice ranked per question for large databases "
        "(default: one overview for every question, RagOptions.stable_schema)",
    )
    models.add_argument(
        "--repair-all",
        action="store_true",
        help="almanac systems: a vote repairs every failed sample, even one whose repair "
        "cannot change the answer (RefineOptions.repair_all; default: only while it could)",
    )
    models.add_argument("--llm-cache", type=Path, help="response cache file (reruns are free)")
    models.add_argument(
        "--calibrator", type=Path, help="confidence calibrator JSON (bench.calibration)"
    )
    models.add_argument(
        "--adaptive-target",
        type=float,
        metavar="T",
        help="adaptive systems: draw more samples while the confidence is under T (default"
        " the server's 0.1); 1.0 samples every question's whole budget, and each answer's"
        " trace then tells what any lower target would have done (bench/adaptive_sweep.py)",
    )
    models.add_argument(
        "--escalation-target",
        type=float,
        metavar="T",
        help="adaptive cascades: a tier before the last answers only at confidence T (and two"
        " of its samples agreeing), else the next tier is asked (default the server's 0.5)",
    )
    models.add_argument("--threads", type=int, help="llama.cpp threads")
    models.add_argument(
        "--sequences",
        type=int,
        help="replies llama.cpp decodes together (greedy + samples of a vote or cascade tier; "
        "default 1, one after the other; almanac's own default is 5)",
    )
    models.add_argument(
        "--llm-timeout",
        type=float,
        help="seconds one model call of the chain may take, its prefill included (default: "
        "--timeout; a long schema prompt on a slow CPU can take longer than the chain's own "
        "120 s, and a call cut off falls back to a plain prompt)",
    )
    models.add_argument(
        "--prompt-cache",
        type=Path,
        help="folder of llama.cpp context states kept across questions and runs "
        "(default: none, every database's prompt prefilled in this process)",
    )
    mining = run.add_argument_group("mining", MINING_HELP)
    mining.add_argument(
        "--mine-every",
        type=int,
        default=0,
        metavar="N",
        help="with --stream: mine the experiences observed since the last round every N"
        " questions seen (labeled: their gold SQL; unlabeled: by the vote), and once after"
        " --learn-split; rounds go to mining.jsonl, their time to no question (0: no mining)",
    )
    mining.add_argument(
        "--mine-gate",
        action="store_true",
        help="activate mined candidates through the regression gate (held: labeled"
        " experiences not used as sources; costs the held questions' LLM calls) instead of"
        " activating every candidate",
    )
    mining.add_argument(
        "--mine-gate-held", type=int, default=20, help="held questions per gate run (default 20)"
    )
    mining.add_argument(
        "--mine-gate-batch", type=int, default=8, help="candidates the gate decides together"
    )
    mining.add_argument(
        "--mine-llm-pairer",
        action="store_true",
        help="pair the phrases alignment leaves with the system's model (a call per experience"
        " that has any)",
    )
    mining.add_argument(
        "--mine-template-support",
        type=int,
        default=None,
        help="fewest labeled questions sharing one slotted SQL that make a query template"
        " (default: the miner's, 2; 0: no templates)",
    )
    mining.add_argument(
        "--mine-vote-samples",
        type=int,
        default=5,
        help="--stream unlabeled and --learn-unlabeled: samples of each question's vote"
        " (kept when 80%% agree)",
    )
    synthesis = run.add_argument_group("synthesis", "query synthesis (bench/synthesis.py)")
    synthesis.add_argument(
        "--synthesize",
        type=int,
        default=0,
        metavar="N",
        help="after --learn-split, synthesize up to N verified pairs from the revealed"
        " examples (almanac systems; spread over the databases; report in synthesis.json)",
    )
    synthesis.add_argument(
        "--synthesize-per-source",
        type=int,
        default=6,
        metavar="K",
        help="variants tried per revealed example (default 6)",
    )
    synthesis.add_argument(
        "--synthesize-transforms",
        metavar="T,T",
        help="only these transforms, comma-separated (of filter, group, join, window,"
        " decompose, vary; default all): e.g. a mix without filter variants",
    )
    synthesis.add_argument(
        "--examples-per-db",
        type=int,
        metavar="K",
        help="--learn-split reveals only the first K examples of each database; answered"
        " questions that were revealed are left out",
    )
    cot = run.add_argument_group("CoT", "checked step-by-step explanations (agents/learn/cot)")
    cot.add_argument(
        "--cot",
        action="store_true",
        help="almanac systems: before the questions, the default model (as teacher) explains"
        " the labeled experiences (--learn-split) in checked steps, shown beside the examples"
        " (report in cot_report.json)",
    )
    cot.add_argument("--cot-limit", type=int, metavar="N", help="--cot: explain at most N")
    cot.add_argument(
        "--cot-scope",
        choices=("all", "asked"),
        default="all",
        help="--cot: explain every labeled experience (all), or only those the asked questions"
        " retrieve as their examples (asked: the same prompts at a fraction of the teacher's"
        " calls; GeoQuery's 500+ train questions take hours on two cores)",
    )
    cot.add_argument(
        "--cot-with-knowledge",
        action="store_true",
        help="--cot: also show the teacher the knowledge behind filters the question does not"
        " name (agents/learn/cot/knowledge.py)",
    )
    run.add_argument("--out", type=Path, help="output folder (default bench/out/DATASET-SYSTEM)")
    run.add_argument("--fresh", action="store_true", help="discard earlier results in --out")
    compare = commands.add_parser(
        "compare", help="compare runs on the questions every one of them scored"
    )
    compare.add_argument("runs", nargs="+", type=Path, help="output folders of `run`")
    compare.add_argument(
        "--out",
        type=Path,
        help="write comparison.md and, for streaming runs, learning_curves.png here",
    )
    compare.add_argument(
        "--window", type=int, default=50, help="questions in the rolling EX of the curves"
    )
    judge = commands.add_parser(
        "judge",
        help="score long-form analysis answers (InsightBench, CORGI, BI-Bench, long-form DBQA)",
    )
    add_protocols(judge)
    add_analyze_command(commands)
    return parser
