"""The bench's mining gate holds the questions the candidates can affect: on GeoQuery with a
scripted model, a ``--learn-split`` round mines every revealed question (nothing is held out
of mining), the gate run records how many held questions say a candidate's phrase, and the
candidate breaking such a question is rejected."""

from __future__ import annotations

import pytest

from agents.learn.gate_held import sha_order
from agents.pipeline import ModelTier, Pipeline, PipelineOptions
from bench.stream_mining import StreamMiner, StreamMiningOptions
from tests.agents.learn.conftest import GEOQUERY, labeled, profiled
from tests.agents.learn.test_gate_held import FILLERS, GOLD, SEATTLE_STATE, misled_by_seattle
from tests.agents.scripted import ScriptedLLM


def test_a_learn_split_round_mines_everything_and_gates_on_targeted_questions(tmp_path):
    if not GEOQUERY.is_file():
        pytest.skip(f"benchmark database {GEOQUERY} not found (set ALMANAC_BENCH_DATA)")
    store, db = profiled(tmp_path, GEOQUERY, "geoquery")
    try:
        pool = [labeled(q, sql, verified=True) for q, sql in GOLD.items()]
        source = labeled(
            "how many people live in seattle",
            "SELECT population FROM city WHERE city_name = 'seattle'",
            verified=True,
        )
        store.upsert_many([*pool, source])
        llm = ScriptedLLM([misled_by_seattle])

        def factory(_database: str):
            def build(kb, retriever):
                return Pipeline(
                    store=kb,
                    retriever=retriever,
                    database=db,
                    database_name="geoquery",
                    tiers=[ModelTier("scripted", llm)],
                    options=PipelineOptions(),
                )

            return build

        miner = StreamMiner(
            store,
            StreamMiningOptions(every=0, gate=True, gate_held=2),
            targets=lambda: {"geoquery": db},
            pipeline_factory=factory,
        )
        revealed = [source, *pool[1:3]]  # the Seattle source and two capital questions
        for experience in revealed:
            miner.observe(experience)
        record = miner.mine(phase="learn-split").to_dict()

        assert record["experiences"] == len(revealed)  # none held out of mining
        assert "held_out" not in record
        (run,) = record["gate_runs"]
        assert run["held"] == 2 and run["targeted"] == 1
        assert run["rejected"] >= 1 and record["rejected"] == run["rejected"]
        (seattle,) = [e for e in store.iterate(source="auto", active=None) if e.name == "seattle"]
        assert seattle.metadata["mining"]["status"] == "rejected"
        broken = seattle.metadata["mining"]["gate"]["broken"]
        assert broken == [next(e.id for e in pool if e.question == SEATTLE_STATE)]
        # the SHA-256 order alone (the former held set) would have held two capital questions
        mined = list(store.iterate(source="auto", active=None))
        sources = {
            p for e in mined if e.content_resources.get("kind") != "template" for p in e.parents
        }
        eligible = [e for e in [*pool, source] if e.id not in sources]
        firsts = sorted(eligible, key=lambda e: sha_order(e.id))[:2]
        assert all(e.question in FILLERS for e in firsts)
    finally:
        db.close()
        store.close()
