"""Wall time of ``almanac ask`` as a user runs it: one process per question.

    python -m bench.perf.cli_ask [--dataset spider_dev] [--database concert_singer]
                                 [--questions 10] [--model qwen2.5-coder-1.5b] [--threads 2]
                                 [--no-warm]

Runs ``almanac init --db URL`` once in a fresh data dir (profiling, indices and, unless
``--no-warm``, warming the model's prompt cache), then ``almanac ask QUESTION --json`` in a new
process for each question on that database. Prints the init time, the wall time of each ask
(process start, imports, index rebuild, model load and the answer) with p50/p90, the answer's
own time and its stages as the JSON reports them, and the overhead (wall minus answer).
The model file is assembled into the default data dir once and used from there as a ``gguf``
tier, so the fresh data dir does not copy a 1 GB file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from agents.models import pull
from bench.datasets import load_dataset
from bench.perf.store import percentile
from server.settings import default_data_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.cli_ask", description=__doc__)
    parser.add_argument("--dataset", default="spider_dev")
    parser.add_argument("--database", default="concert_singer")
    parser.add_argument("--split")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--no-warm", dest="warm", action="store_false")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset).filter(
        database=args.database, split=args.split, limit=args.questions
    )
    if not len(dataset):
        raise SystemExit(f"no questions on {args.database!r} in {args.dataset}")
    model = pull(args.model, default_data_dir(), progress=False)
    tier = {"name": "default", "backend": "gguf", "path": str(model)}
    if args.threads:
        tier["n_threads"] = args.threads
    env = {**os.environ, "ALMANAC_LLM_TIERS": json.dumps([tier])}
    with tempfile.TemporaryDirectory(prefix="almanac-cli-ask-") as data_dir:
        almanac = [sys.executable, "-m", "server.cli", "--data-dir", data_dir]
        url = dataset.examples[0].database_url
        init = [*almanac, "init", "--db", str(url), *([] if args.warm else ["--no-warm"])]
        started = time.perf_counter()
        done = subprocess.run(init, env=env, capture_output=True, text=True, check=False)
        init_s = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"init failed: {done.stderr[-2000:]}")
        print(f"init {init_s:.1f} s: {done.stdout.strip().splitlines()[-2]}")
        walls, answers, stages = [], [], {}
        for example in dataset.examples:
            ask = [*almanac, "ask", example.question, "--json"]
            if example.context.query_time:
                ask += ["--query-time", example.context.query_time.isoformat()]
            started = time.perf_counter()
            done = subprocess.run(ask, env=env, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - started)
            answer = json.loads(done.stdout)
            answers.append(answer["seconds"])
            for stage in answer["stages"]:
                stages.setdefault(stage["stage"], []).append(stage["seconds"])
            print(
                f"{example.id}: wall {walls[-1]:.1f} s, answer {answer['seconds']:.1f} s, "
                f"prompt {answer['prompt_tokens']} tokens: {(answer['sql'] or '')[:70]!r}"
            )
    overhead = [w - a for w, a in zip(walls, answers, strict=True)]
    print(f"almanac ask ({args.model}, {len(walls)} questions on {args.database}):")
    for name, values in [("wall", walls), ("answer", answers), ("overhead", overhead)]:
        print(_percentiles(name, values))
    for name, values in stages.items():
        print(_percentiles(name, values))


def _percentiles(name: str, values: list[float]) -> str:
    return (
        f"  {name:<10} p50 {percentile(values, 0.5):6.2f} s  p90 {percentile(values, 0.9):6.2f} s"
    )


if __name__ == "__main__":
    main()
