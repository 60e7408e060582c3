"""Latency of ``ask`` with a real model, stage by stage.

    python -m bench.perf.ask [--dataset spider_dev] [--questions 20] [--model qwen2.5-coder-1.5b]
                             [--n 1] [--cascade] [--threads 2]

Profiles the databases of the sampled questions first (knowledge-base construction is not
part of a question's latency), loads the model once, asks each question through the
``Pipeline`` and prints p50/p90/max of the whole answer and of each stage (retrieve,
generate, refine, log), with prompt and completion tokens per question.
"""

from __future__ import annotations

import argparse
import statistics
import time

from tqdm import tqdm

from agents.pipeline import AskOptions, ModelTier, Pipeline
from bench.agent_workspace import AgentWorkspace, ModelChoice, load_llm
from bench.datasets import load_dataset
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
    args = parser.parse_args(argv)

    dataset = load_dataset(args.dataset)
    if args.split:
        dataset = dataset.filter(split=args.split)
    sample = stratified_sample(dataset, args.questions, seed=1)
    choice = ModelChoice(model=args.model, small_model=args.small_model, threads=args.threads)
    workspace = AgentWorkspace()
    for example in tqdm(sample.examples, desc="profiling", unit="q"):
        workspace.database(example)
    retriever = workspace.retriever
    retriever.refresh()
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
    for example in tqdm(sample.examples, desc="asking", unit="q"):
        if example.database not in pipelines:
            pipelines[example.database] = Pipeline(
                store=workspace.store,
                retriever=retriever,
                database=workspace.database(example),
                database_name=example.database,
                tiers=tiers,
            )
        started = time.perf_counter()
        answer = pipelines[example.database].ask(
            example.question, example.context.model_dump(mode="json"), options
        )
        totals.append(time.perf_counter() - started)
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
    workspace.close()


if __name__ == "__main__":
    main()
