"""What the regression gate costs (scripted model: the gate's own work, not the LLM's).

    python -m bench.gate_cost [--dataset geoquery] [--mine 549] [--held 40] [--batch 8]
                              [--bad-every 10] [--embedder hashing|minilm] [--cold] [--json]

Profiles the dataset's database into a fresh store, stores the first ``--mine`` train
questions as labeled experiences and mines them (:func:`agents.learn.mine.mine_labeled`: the
candidates), stores ``--held`` test questions as verified experiences (the held set), and
runs :class:`agents.learn.gate.RegressionGate` over the candidates with a scripted model: it
writes the gold SQL, except that it writes a wrong one when the prompt names one of the
"bad" candidates (every ``--bad-every``-th; 0: none), so bisection has something to find.

As on a server, the live store's indices are built first with the same embedder (the
server's are built at its start; reported as ``live_index_seconds``, not the gate's cost):
the embedder caches vectors by text, so the scratch copy's indices read them instead of
embedding the knowledge base again. ``--cold`` skips that (the gate embeds everything).

Prints the scratch copy's setup (copy and index build), the baseline, and per decision the
group size, seconds, questions asked and seconds per held question; then the totals:
evaluations, retrievals, questions asked, LLM calls.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from agents.learn.gate import GateOptions, HeldQuestion, RegressionGate
from agents.learn.mine import candidates, mine_labeled
from agents.llm.base import ChatResult, Completion, Message
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from bench.datasets import load_dataset
from bench.metrics.exact import execution_accuracy
from indices.embeddings import Embedder, HashingEmbedder, shared_minilm
from indices.index_set import IndexSet
from kb.profile.profiler import ProfileOptions, profile_database
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import ExperienceUKF


class GoldWriter:
    """A scripted model: the gold SQL of the question in the prompt, or a wrong query when
    the prompt's knowledge names a bad phrase."""

    name = "gold-writer"

    def __init__(self, gold: dict[str, str], bad: set[str]) -> None:
        self.gold, self.bad, self.calls = gold, bad, 0

    def chat(self, messages: list[Message], **options: Any) -> ChatResult:
        self.calls += 1
        text = messages[-1]["content"]
        question = text.rsplit("### Question", 1)[-1].strip()
        knowledge = text.split("### Knowledge", 1)[-1] if "### Knowledge" in text else ""
        misled = any(f'"{phrase}"' in knowledge for phrase in self.bad)
        sql = "SELECT 0" if misled else self.gold.get(question, "SELECT 1")
        reply = f"```sql\n-- Tables: any\n{sql}\n```"
        return ChatResult(
            completions=[Completion(reply, "stop") for _ in range(options.get("n", 1))],
            model=self.name,
        )


def experience(question: str, sql: str, database: str, **fields: Any) -> ExperienceUKF:
    return ExperienceUKF.create(
        question, sql, database=database, dialect="sqlite", labeled=True, source="user", **fields
    )


def measure(
    dataset: str,
    mine: int,
    held: int,
    batch: int,
    bad_every: int,
    embedder: Embedder,
    cold: bool = False,
) -> dict[str, Any]:
    examples = load_dataset(dataset).examples
    train = [e for e in examples if e.split == "train"][:mine]
    test = [e for e in examples if e.split == "test"][:held]
    name, url = test[0].database, test[0].database_url
    assert url, f"{dataset} has no database url"
    with tempfile.TemporaryDirectory(prefix="gate-bench-") as folder:
        store = KnowledgeStore(f"sqlite:///{Path(folder) / 'knowledge.db'}")
        database = Database(url)
        profile_database(
            database, store, database_name=name, options=ProfileOptions(progress=False)
        )
        sources = [experience(e.question, e.gold_sql[0], name) for e in train]
        store.upsert_many(sources)
        started = time.perf_counter()
        mine_labeled(store, sources, job_id="gate-bench", targets={name: database})
        mine_seconds = time.perf_counter() - started
        held_experiences = [
            experience(e.question, e.gold_sql[0], name, verified=True) for e in test
        ]
        store.upsert_many(held_experiences)
        pending = candidates(store, job_id="gate-bench")
        started = time.perf_counter()
        if not cold:  # the server's own indices, built at its start
            IndexSet.build(store, embedder).stop()
        live_index_seconds = time.perf_counter() - started
        bad = {c.name for c in pending[bad_every - 1 :: bad_every]} if bad_every else set()
        llm = GoldWriter({e.question: e.gold_sql[0] for e in test}, bad)

        def factory(scratch: KnowledgeStore, retriever: Any) -> Pipeline:
            return Pipeline(
                store=scratch,
                retriever=retriever,
                database=database,
                database_name=name,
                tiers=[ModelTier("scripted", llm)],  # type: ignore[arg-type]
                options=PipelineOptions(),
            )

        gate = RegressionGate(
            factory,
            [HeldQuestion.of(e) for e in held_experiences],
            database,
            embedder=embedder,
            options=GateOptions(batch_size=batch),
            same_result=execution_accuracy,
            llm_calls=lambda: llm.calls,
        )
        report = gate.run(store, pending)
        entries = store.count(active=None)
        store.close()
        database.close()
    out = report.to_dict()
    out.update(
        dataset=dataset,
        store_entries=entries,
        candidates=len(pending),
        bad=sorted(bad),
        mine_seconds=round(mine_seconds, 3),
        live_index_seconds=None if cold else round(live_index_seconds, 3),
    )
    for decision in out["decisions"]:
        decision["seconds_per_held"] = round(decision["seconds"] / max(report.held, 1), 4)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="geoquery")
    parser.add_argument("--mine", type=int, default=549, help="train questions mined")
    parser.add_argument("--held", type=int, default=40, help="test questions held")
    parser.add_argument("--batch", type=int, default=8, help="candidates per batch")
    parser.add_argument("--bad-every", type=int, default=10, help="every n-th candidate misleads")
    parser.add_argument("--embedder", choices=["hashing", "minilm"], default="hashing")
    parser.add_argument(
        "--cold", action="store_true", help="no live indices first: the gate embeds the store"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    embedder = HashingEmbedder() if args.embedder == "hashing" else shared_minilm()
    out = measure(
        args.dataset, args.mine, args.held, args.batch, args.bad_every, embedder, args.cold
    )
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(
        f"{out['dataset']}: {out['store_entries']} entries, {out['candidates']} candidates "
        f"({len(out['bad'])} misleading), {out['held']} held, mined in {out['mine_seconds']} s"
    )
    live = out["live_index_seconds"]
    print(f"live indices (the server's, before the gate): {live if live is not None else '-'} s")
    print(
        f"scratch setup {out['setup_seconds']} s: copy {out['copy_seconds']} s, "
        f"indices {out['index_seconds']} s"
    )
    print(f"EX baseline {out['baseline_ex']} -> final {out['final_ex']}")
    for d in out["decisions"]:
        print(
            f"  {d['decision']:9} group {d['group']:2}  {d['seconds']:.2f} s  "
            f"asked {d['asked']:3}  {d['seconds_per_held']:.3f} s/held  "
            f"fixed {len(d['fixed'])} broken {len(d['broken'])}"
        )
    print(
        f"activated {len(out['activated'])}, rejected {len(out['rejected'])}; "
        f"{out['evaluations']} evaluations, {out['retrievals']} retrievals, "
        f"{out['asked']} asked, {out['llm_calls']} LLM calls, {out['seconds']} s in all; "
        f"broken only together: {len(out['combined_broken'])}"
    )


if __name__ == "__main__":
    main()
