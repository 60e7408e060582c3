"""How well the model's own verdict on its answers ("P(True)",
:mod:`agents.confidence.self_check`) tells right answers from wrong ones, on recorded runs.

For every scored answer of a ``bench run`` folder, the model is shown the database's schema,
the question and the predicted SQL, and asked whether the query answers it; the probability
of "yes" is written into a copy of the run (``OUT/results.jsonl``, the signal
``self_check_p_yes`` beside the recorded ones), and the AUROC of that probability alone and
of the recorded confidence are printed. ``python -m bench.calibration report`` on the copy
then says what the signal adds to the others (compare with the same report on the run)::

    python -m bench.self_check --run bench/out/s55-spider300-greedy --dataset spider_dev \\
        --model qwen2.5-coder-1.5b --threads 2 --out bench/out/s55-spider300-greedy-sc
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from agents.confidence.metrics import auroc
from agents.confidence.self_check import SelfCheck, schema_ddl
from bench.agent_workspace import ModelChoice, load_llm
from bench.datasets.registry import load_dataset
from bench.run_copy import copy_run
from kb.target.database import Database

SIGNAL = "self_check_p_yes"


def check_run(run: Path, dataset: str, checker: SelfCheck, out: Path) -> dict[str, float | None]:
    """Writes ``out/results.jsonl`` (the run's lines, each scored answer with the signal)
    and returns the AUROCs (the signal alone, the recorded confidence) and coverage."""
    urls = load_dataset(dataset).databases
    schemas: dict[str, str] = {}
    p_yes: list[float] = []
    recorded: list[float] = []
    labels: list[bool] = []

    def add_verdict(row: dict) -> None:
        sql, scores = row.get("predicted_sql"), row.get("scores")
        if not sql or scores is None or row["database"] not in urls:
            return
        if row["database"] not in schemas:
            database = Database(urls[row["database"]])
            schemas[row["database"]] = schema_ddl(database)
            database.close()
        verdict = checker.verdict(row["question"], schemas[row["database"]], sql)
        if verdict.p_yes is None:
            return
        meta = row.setdefault("system_metadata", {})
        meta.setdefault("signals", {})[SIGNAL] = round(verdict.p_yes, 4)
        p_yes.append(verdict.p_yes)
        labels.append(scores.get("ex", 0.0) >= 1.0)
        confidence = meta.get("confidence")
        recorded.append(float(confidence) if confidence is not None else 0.0)

    copy_run(run, out, add_verdict, progress="self-check")
    return {
        "answers_read": float(len(labels)),
        "right": float(sum(labels)),
        "auroc_self_check": auroc(p_yes, labels),
        "auroc_recorded_confidence": auroc(recorded, labels),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.self_check", description=__doc__)
    parser.add_argument("--run", type=Path, required=True, help="a bench run folder")
    parser.add_argument("--dataset", required=True, help="the run's dataset (name or path)")
    parser.add_argument("--out", type=Path, required=True, help="where the copy goes")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--llm-cache", type=Path, default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if not (args.run / "results.jsonl").is_file():
        print(f"no results.jsonl in {args.run}", file=sys.stderr)
        return 2
    llm = load_llm(args.model, ModelChoice(llm_cache=args.llm_cache, threads=args.threads))
    figures = check_run(args.run, args.dataset, SelfCheck(llm), args.out)
    for name, value in figures.items():
        print(f"{name}: {value if value is None else round(value, 4)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
