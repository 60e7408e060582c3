"""CoT profiling end to end with the real embedded 0.5B model on Spider's concert_singer:
verified experiences, the profiled schema, the writer with its retry, the checker and the
store. The small model need not pass; what it stores must: the report agrees with the store,
every stored CoT passes the checker again, and a failed one keeps no text."""

from __future__ import annotations

import json

import pytest

from agents.learn.cot import CotWriter, check_cot, cot_experiences, cot_record, profile_cot
from agents.llm.llamacpp import LlamaCppLLM
from tests.agents.learn.conftest import SPIDER, labeled, profiled

DATABASE = "concert_singer"
PAIRS = [
    ("How many singers do we have?", "SELECT count(*) FROM singer"),
    (
        "What are the names of the singers from France?",
        "SELECT name FROM singer WHERE country = 'France'",
    ),
]


@pytest.mark.slow
def test_the_small_model_writes_cot_that_the_checker_decides(tmp_path, embedded_model_path):
    store, database = profiled(tmp_path, SPIDER / DATABASE / f"{DATABASE}.sqlite", DATABASE)
    try:
        store.upsert_many([labeled(q, sql, DATABASE, verified=True) for q, sql in PAIRS])
        llm = LlamaCppLLM(str(embedded_model_path), n_ctx=4096)
        report = profile_cot(
            store, cot_experiences(store, database=DATABASE), CotWriter(llm, max_tokens=200)
        )
        data = report.to_dict()
        print("CoT report:", json.dumps(data, sort_keys=True))
        assert data["asked"] == len(PAIRS) == data["passed"] + data["failed"]
        assert (
            data["written"] == data["passed"] and sum(data["failed_by"].values()) >= data["failed"]
        )
        assert 1 <= data["attempts"] <= 2 * len(PAIRS)
        stored = cot_experiences(store, database=DATABASE)
        passed = 0
        for experience in stored:
            record = cot_record(experience)
            assert record is not None and record["model"] == llm.name
            if record["passed"]:
                passed += 1
                assert record["steps"] and record["text"]
                again = check_cot(experience.question, experience.sql, record["text"])
                assert again.passed, again.reasons
            else:
                assert "text" not in record and record["verdict"]["reasons"]
        assert passed == data["passed"]
        rerun = profile_cot(store, stored, CotWriter(llm))
        assert rerun.asked == 0 and sum(rerun.skipped.values()) == len(PAIRS)
    finally:
        database.close()
        store.close()
