"""The questions `make demo` prints are answered right.

AutoFin and its knowledge base are built as ``almanac demo`` builds them (``prepare_demo``:
generated database, profiled schema, knowledge pack, the train questions as worked examples;
a copy of the session's ``almanac demo --no-serve`` build, which ``prepare_demo`` reuses),
the model tiers are the demo's (``demo_settings``: small 0.5B, then the default 1.5B), and
each printed question is asked as its printed request asks it (the ``/v1/ask`` body: its
context, default options, so the default 1.5B answers). Its rows must be the gold query's
(BIRD's EX, ``bench.metrics``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.pipeline import AskOptions, ModelTier, Pipeline
from agents.pipeline_options import PipelineOptions
from agents.sql.generate import GenerateOptions
from bench.autofin.demo_questions import DEMO_QUESTIONS, DemoQuestion
from bench.autofin.questions.slots import TRAITS
from bench.metrics.exact import execution_accuracy
from server.cli import demo_examples, demo_settings, prepare_demo
from server.settings import load_settings
from tests.support.prebuilt import DemoBuild, copy_demo
from ukf import QueryContext

# A loaded 2-core machine can take minutes to read a cold AutoFin prompt, past the 120 s a
# draw waits by default (GenerateOptions.timeout_s); a timeout would only draw it again.
GENERATE_TIMEOUT_S = 1200.0


def test_the_demo_prints_every_question_with_its_trait_and_context():
    text = demo_examples("http://127.0.0.1:8421", "ANALYST", "OPS")
    assert {q.trait for q in DEMO_QUESTIONS} == set(TRAITS)  # one question per trait
    for question in DEMO_QUESTIONS:
        assert question.shows in text and f"[{question.trait}]" in text
        body = question.ask_body()
        assert (f"-d '{body}'" in text) == ("'" not in body)  # else shell-quoted
    with_context = [q for q in DEMO_QUESTIONS if q.context]
    assert with_context and all('"user_profile"' in q.ask_body() for q in with_context)
    assert f"-d '{DEMO_QUESTIONS[0].ask_body()}'" in text.split("Example questions")[0]
    assert "Web page: http://127.0.0.1:8421/ui/" in text


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_build: DemoBuild) -> Iterator[Pipeline]:
    from indices.index_set import IndexSet
    from kb.store import KnowledgeStore
    from kb.target.database import Database
    from server.confidence import confidence_assessor
    from server.llm_factory import LLMTiers
    from server.metrics import Metrics
    from server.state import configured_embedder

    # the session's `almanac demo --no-serve` build (tests/conftest.py), models linked
    data_dir = copy_demo(demo_build, tmp_path_factory.mktemp("demo") / "data")
    settings = load_settings(data_dir=data_dir)
    with KnowledgeStore(settings.resolved_store_url) as store:
        folder = prepare_demo(settings, store)
    settings = demo_settings(settings, folder)
    tiers = LLMTiers(settings.llm_tiers, settings.data_dir, Metrics())
    with (
        KnowledgeStore(settings.resolved_store_url) as store,
        Database(str(settings.target_url)) as database,
    ):
        indices = IndexSet.build(store, configured_embedder(settings))
        yield Pipeline(
            store=store,
            retriever=indices.retriever,
            database=database,
            database_name=settings.resolved_target_name or "autofin",
            tiers=[ModelTier(name, tiers.get(name)) for name in settings.cascade_tiers],
            options=PipelineOptions(generate=GenerateOptions(timeout_s=GENERATE_TIMEOUT_S)),
            # the server's abstention threshold: a demo question must not be withheld
            confidence=confidence_assessor(
                settings, store, settings.resolved_target_name or "autofin", database.dialect
            ),
        )


@pytest.mark.slow  # builds the demo once (~1 min) and asks the 1.5B each question (~0.5-2 min)
@pytest.mark.parametrize("question", DEMO_QUESTIONS, ids=lambda q: q.trait)
def test_the_demo_question_is_answered_with_the_gold_rows(
    demo: Pipeline, question: DemoQuestion, tmp_path: Path
):
    started = time.perf_counter()
    context = QueryContext(query_time=question.query_time, user_profile=question.user_profile)
    answer = demo.ask(question.question, context, AskOptions(adaptive=False))
    gold = demo.database.execute(question.gold_sql)
    assert gold.error is None and gold.rows, question.gold_sql
    print(f"{question.trait}: {time.perf_counter() - started:.1f} s, SQL: {answer.sql}")
    assert answer.executed and not answer.truncated, (answer.sql, answer.error)
    assert not answer.abstained, (answer.confidence, answer.abstention)
    assert execution_accuracy(answer.rows, gold.rows), (
        f"{question.question!r} answered with {answer.sql!r}: {answer.rows[:3]} "
        f"instead of {gold.rows[:3]}"
    )
