"""Wall time of ``almanac ask`` as a user runs it: one process per question.

    python -m perf.cli_ask [--dataset spider_dev] [--database concert_singer]
                                 [--questions 10] [--model qwen2.5-coder-1.5b] [--threads 2]
                                 [--no-warm] [--data-dir DIR]

Runs ``almanac init --db URL`` once in a fresh data dir (profiling, indices and, unless
``--no-warm``, warming the model's prompt cache), then ``almanac ask QUESTION --json`` in a new
process for each question on that database. Prints the init time, the wall time of each ask
(process start, imports, index rebuild, model load and the answer) with p50/p90, the answer's
own time and its stages as the JSON reports them, and the overhead (wall minus answer).
The model file is assembled into the default data dir once and used from there as a ``gguf``
tier, so the fresh data dir does not copy a 1 GB file. ``--data-dir DIR`` asks in an existing
data dir instead (``almanac demo``'s, say), with no init: the dataset's database is passed as
``--db``, its questions' query time and user profile as ``--query-time``/``--user-profile``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agents.llm.models import default_data_dir, pull
from bench.datasets import load_dataset
from bench.perf.store import percentile


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perf.cli_ask", description=__doc__)
    parser.add_argument("--dataset", default="spider_dev")
    parser.add_argument("--database", default="concert_singer")
    parser.add_argument("--split")
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--no-warm", dest="warm", action="store_false")
    parser.add_argument("--data-dir", type=Path, help="an existing data dir: ask there, no init")
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
    with tempfile.TemporaryDirectory(prefix="almanac-cli-ask-") as scratch:
        data_dir = str(args.data_dir or scratch)
        almanac = [sys.executable, "-m", "server.cli", "--data-dir", data_dir]
        url = str(dataset.examples[0].database_url)
        if args.data_dir is None:
            _init(almanac, url, args.database, args.warm, env)
        walls, answers, stages = [], [], {}
        for example in dataset.examples:
            ask = [*almanac, "ask", example.question, "--json", "--db", url]
            ask += ["--name", example.database]
            if example.context.query_time:
                ask += ["--query-time", example.context.query_time.isoformat()]
            if example.context.user_profile:
                profile = Path(scratch) / "profile.json"
                profile.write_text(json.dumps(example.context.user_profile))
                ask += ["--user-profile", str(profile)]
            started = time.perf_counter()
            done = subprocess.run(ask, env=env, capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - started)
            try:
                answer = json.loads(done.stdout)
            except json.JSONDecodeError:
                raise SystemExit(f"{example.id}: ask failed: {done.stderr[-2000:]}") from None
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


def _init(almanac: list[str], url: str, name: str, warm: bool, env: dict[str, str]) -> None:
    init = [*almanac, "init", "--db", url, "--name", name, *([] if warm else ["--no-warm"])]
    started = time.perf_counter()
    done = subprocess.run(init, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"init failed: {done.stderr[-2000:]}")
    lines = done.stdout.strip().splitlines()
    print(f"init {time.perf_counter() - started:.1f} s: {lines[-2] if len(lines) > 1 else ''}")


def _percentiles(name: str, values: list[float]) -> str:
    return (
        f"  {name:<10} p50 {percentile(values, 0.5):6.2f} s  p90 {percentile(values, 0.9):6.2f} s"
    )


if __name__ == "__main__":
    main()
