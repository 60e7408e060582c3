"""CoT profiling with a scripted teacher: the retry with the checker's reasons, what is stored
on the experience, idempotence, resuming after an interruption, cancellation, and the checked
CoT as its own vector space."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents.learn.cot import CotWriter, checked_cot, cot_experiences, cot_record, profile_cot
from agents.llm.base import Cancellation, LLMCancelledError
from indices.embeddings import HashingEmbedder
from indices.vector import VectorIndex
from kb.store import KnowledgeStore
from tests.agents.scripted import ScriptedLLM, asked_question
from ukf import ExperienceUKF

PAIRS = {
    "How many singers are there?": (
        "SELECT count(*) FROM singer",
        '1. `singer` holds the singers.\n2. "How many" counts them: count(*).',
    ),
    "Which singers are from France?": (
        "SELECT name FROM singer WHERE country = 'France'",
        "1. Read `name` from `singer`.\n2. \"from France\" is the filter `country` = 'France'.",
    ),
    "How old is the oldest singer?": (
        "SELECT max(age) FROM singer",
        '1. Read the `singer` table.\n2. "oldest" is the maximum of `age`: max(age).',
    ),
}
WRONG = "1. Read the `singer` table.\n2. Keep those with `age` > 99."


def _experiences(**fields: Any) -> list[ExperienceUKF]:
    return [
        ExperienceUKF.create(
            q, sql, database="concert_singer", dialect="sqlite", labeled=True, **fields
        )
        for q, (sql, _) in PAIRS.items()
    ]


def teacher(wrong_first: set[str] = frozenset(), always_wrong: set[str] = frozenset()) -> Any:
    """Explains right, except: wrong at first for ``wrong_first``, always for ``always_wrong``."""

    def reply(messages: list[dict[str, str]], _options: dict[str, Any]) -> str:
        question = asked_question(messages)
        retried = messages[-1]["content"].startswith("These steps do not match")
        if question in always_wrong or (question in wrong_first and not retried):
            return WRONG
        return PAIRS[question][1]

    return ScriptedLLM([reply], name="teacher")


@pytest.fixture()
def sqlite_store(tmp_path: Path):
    with KnowledgeStore(f"sqlite:///{tmp_path / 'knowledge.db'}") as store:
        yield store


def test_a_failing_explanation_is_retried_once_with_the_checkers_reasons():
    llm = teacher(wrong_first={"How many singers are there?"})
    attempt = CotWriter(llm).write("How many singers are there?", "SELECT count(*) FROM singer")
    assert attempt.passed and attempt.attempts == 2
    retry = llm.calls[1][0][-1]["content"]
    assert "unexplained aggregate COUNT(*)" in retry and "name age" in retry
    assert llm.calls[1][0][-2] == {"role": "assistant", "content": WRONG}

    stubborn = teacher(always_wrong={"How many singers are there?"})
    failed = CotWriter(stubborn).write("How many singers are there?", "SELECT count(*) FROM singer")
    assert not failed.passed and failed.text is None and failed.attempts == 2
    assert len(stubborn.calls) == 2  # one retry, no more
    assert "unexplained aggregate COUNT(*)" in failed.verdict.reasons


def test_checked_cot_is_stored_on_the_experience_and_a_rerun_skips_it(store):
    store.upsert_many(_experiences())
    unverified = ExperienceUKF.create("What is asked?", "SELECT 1", database="concert_singer")
    store.upsert(unverified)  # unlabeled: no CoT is written for it
    found = cot_experiences(store, database="concert_singer")
    assert {e.question for e in found} == set(PAIRS)
    failing = "How old is the oldest singer?"
    llm = teacher(always_wrong={failing})
    report = profile_cot(store, found, CotWriter(llm), job_id="j1")
    data = report.to_dict()
    assert (data["asked"], data["passed"], data["failed"], data["written"]) == (3, 2, 1, 2)
    assert data["pass_share"] == round(2 / 3, 4) and data["failed_by"]
    assert data["failures"][0]["reasons"] and data["skipped"] == {}
    stored = {e.question: e for e in cot_experiences(store, database="concert_singer")}
    for question, (_, explanation) in PAIRS.items():
        record = cot_record(stored[question])
        assert record is not None and record["model"] == "teacher" and record["job_id"] == "j1"
        if question == failing:
            assert record["passed"] is False and "text" not in record
            assert checked_cot(stored[question]) is None
        else:
            assert record["passed"] is True and record["verdict"]["passed"] is True
            assert record["text"] == explanation
            steps = [line.split(". ", 1)[1] for line in explanation.splitlines()]
            assert checked_cot(stored[question]) == steps
    version, calls = store.version, len(llm.calls)
    again = profile_cot(store, cot_experiences(store), CotWriter(llm))
    assert again.asked == 0 and len(llm.calls) == calls and store.version == version
    assert again.skipped == {"has a passing CoT": 2, "failed before with this model": 1}
    retried = profile_cot(store, cot_experiences(store), CotWriter(teacher()), retry_failed=True)
    assert (retried.asked, retried.passed) == (1, 1)
    # a changed SQL makes the stored CoT stale: the experience needs one again
    entry = stored["Which singers are from France?"]
    changed = entry.clone(
        content_resources={**entry.content_resources, "sql": "SELECT name FROM singer"}
    )
    assert isinstance(changed, ExperienceUKF) and checked_cot(changed) is None


def test_an_interrupted_run_resumes_where_its_last_write_left_off(sqlite_store):
    store = sqlite_store
    store.upsert_many(_experiences())
    token = Cancellation()
    llm = teacher()
    done: list[int] = []

    def progress(count: int, _total: int) -> None:
        done.append(count)
        if count == 2:
            token.cancel("stopped by the test")

    with pytest.raises(LLMCancelledError, match="stopped by the test"):
        profile_cot(
            store,
            cot_experiences(store),
            CotWriter(llm),
            checkpoint=10,
            progress=progress,
            cancellation=token,
        )
    assert done == [1, 2] and len(llm.calls) == 2
    kept = [e for e in cot_experiences(store) if checked_cot(e)]
    assert len(kept) == 2  # written when it stopped, though the checkpoint was not reached
    resumed = profile_cot(store, cot_experiences(store), CotWriter(llm))
    assert resumed.asked == 1 and resumed.skipped == {"has a passing CoT": 2}
    assert len(llm.calls) == 3 and all(checked_cot(e) for e in cot_experiences(store))


def test_limit_and_dry_run(sqlite_store):
    store = sqlite_store
    store.upsert_many(_experiences())
    version = store.version
    dry = profile_cot(store, cot_experiences(store), CotWriter(teacher()), apply=False, limit=2)
    assert dry.asked == 2 and dry.skipped == {"over the limit": 1} and dry.written == 0
    assert store.version == version


def test_the_checked_cot_is_its_own_vector_space(sqlite_store):
    store = sqlite_store
    store.upsert_many(_experiences())
    profile_cot(store, cot_experiences(store), CotWriter(teacher()))
    index = VectorIndex(HashingEmbedder())
    index.add(store.iterate(type="experience"))
    assert index.size("cot_profile") == 3
    hits = index.search(
        "the filter country = 'France'", serializers=("cot_profile",), k=1, types=["experience"]
    )
    best = store.get(hits[0].ukf_id)
    assert best.name == "Which singers are from France?"
