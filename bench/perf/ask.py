"""Latency of ``ask`` with a real model, stage by stage.

    python -m bench.perf.ask [--dataset spider_dev] [--questions 20] [--model qwen2.5-coder-1.5b]
                             [--n 1] [--cascade] [--threads 2] [--prompt-cache DIR] [--warm]
                             [--sequences 1] [--details]

Profiles the databases of the sampled questions first (knowledge-base construction is not
part of a question's latency), loads the model once, asks each question through the
``Pipeline`` and prints p50/p90/max of the whole answer and of each stage (retrieve,
generate, refine, log), with prompt and completion tokens per question.

``--prompt-cache DIR`` keeps llama.cpp context states in DIR, as ``almanac`` does in its
data dir; ``--warm`` prefills each database's shared prompt prefix while profiling, as
``almanac init`` does (its time is printed apart, not counted in the answers');
``--sequences N`` lets llama.cpp decode up to N replies of a vote together (``--n``), as
``almanac`` does with ``parallel_sequences`` (default 5).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from tqdm import tqdm

from agents.answer import Answer
from agents.pipeline import AskOptions, ModelTier, Pipeline
from agents.warm import warm_pipeline
from bench.agent_workspace import AgentWorkspace, ModelChoice, load_llm
from bench.datasets import MissingDatabaseError, load_dataset, require_databases
from bench.perf.store import percentile
from bench.sampling import stratified_sample


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.perf.ask", description=__doc__)
    parser.add_argument("--dataset", default="spider_dev")
    parser.add_argument("--split")
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--small-model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--n", type=int, default=1)
    parser.add_argument("--cascade", action="store_true")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--sequences", type=int, default=1, help="replies decoded together")
    parser.add_argument("--prompt-cache", type=Path, help="folder of llama.cpp context states")
    parser.add_argument("--warm", action="store_true", help="warm each database, as init does")
    parser.add_argument("--details", action="store_true", help="one line per question")
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset)
    if args.split:
        dataset = dataset.filter(split=args.split)
    sample = stratified_sample(dataset, args.questions, seed=1)
    try:
        require_databases(sample, source=Path(args.dataset))
    except MissingDatabaseError as exc:
        parser.error(str(exc))
    choice = ModelChoice(
        model=args.model,
        small_model=args.small_model,
        threads=args.threads,
        prompt_cache=args.prompt_cache,
        sequences=args.sequences,
    )
    workspace = AgentWorkspace()
    for example in tqdm(sample.examples, desc="profiling", unit="q"):
        workspace.database(example)
    workspace.indices.refresh()
    tiers = [ModelTier("default", load_llm(args.model, choice))]
    if args.cascade:
        tiers.insert(0, ModelTier("small", load_llm(args.small_model, choice), samples=2))
    pipelines: dict[str, Pipeline] = {}
    options = AskOptions(n=args.n, cascade=args.cascade)
    totals: list[float] = []
    stages: dict[str, list[float]] = {}
    prompt_tokens: list[int] = []
    completion_tokens: list[int] = []
    tiers_used: dict[str, int] = {}
    for example in sample.examples:
        if example.database not in pipelines:
            pipelines[example.database] = Pipeline(
                store=workspace.store,
                retriever=workspace.retriever,
                database=workspace.database(example),
                database_name=example.database,
                tiers=tiers,
            )
    warming = [
        warm_pipeline(pipeline)
        for pipeline in tqdm(pipelines.values(), desc="warming", unit="db", disable=not args.warm)
        if args.warm
    ]
    for example in tqdm(sample.examples, desc="asking", unit="q"):
        started = time.perf_counter()
        answer = pipelines[example.database].ask(example.question, example.context, options)
        totals.append(time.perf_counter() - started)
        if args.details:
            tqdm.write(_detail_line(example.id, totals[-1], answer))
        for stage in answer.stages:
            stages.setdefault(stage.stage, []).append(stage.seconds)
        prompt_tokens.append(answer.prompt_tokens)
        completion_tokens.append(answer.completion_tokens)
        tiers_used[answer.tier or "none"] = tiers_used.get(answer.tier or "none", 0) + 1

    mode = "cascade" if args.cascade else f"n={args.n}"
    print(f"ask latency: {args.model} {mode}, {len(totals)} questions of {dataset.name}")
    print(
        f"  {'total':<10} p50 {percentile(totals, 0.5):6.2f} s  "
        f"p90 {percentile(totals, 0.9):6.2f} s  "
        f"max {max(totals):6.2f} s"
    )
    for name, values in stages.items():
        print(
            f"  {name:<10} p50 {percentile(values, 0.5):6.2f} s  "
            f"p90 {percentile(values, 0.9):6.2f} s  "
            f"mean {statistics.fmean(values):6.2f} s"
        )
    print(
        f"  tokens     prompt p50 {percentile(prompt_tokens, 0.5):.0f}  "
        f"completion p50 {percentile(completion_tokens, 0.5):.0f}"
    )
    if args.cascade:
        print(f"  answered by tier: {tiers_used}")
    if warming:
        seconds = [w.seconds for w in warming]
        print(
            f"  warming    {len(warming)} databases, p50 {percentile(seconds, 0.5):.2f} s, "
            f"prompt p50 {percentile([w.prompt_tokens for w in warming], 0.5):.0f} tokens"
        )
    workspace.close()


def _detail_line(example_id: str, seconds: float, answer: Answer) -> str:
    stages = " ".join(f"{s.stage}={s.seconds:.1f}" for s in answer.stages)
    repairs = sum(c.repairs for c in answer.candidates)
    notes = "; ".join(n[:60] for c in answer.candidates for n in c.notes)
    return (
        f"{example_id}: {seconds:.1f} s ({stages}) prompt {answer.prompt_tokens} "
        f"completion {answer.completion_tokens} repairs {repairs} {notes}"
    )


if __name__ == "__main__":
    main()
