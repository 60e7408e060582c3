"""Period predicates mined from labeled questions on a real database (Spider's concert_singer,
whose ``concert.Year`` holds '2014' and '2015'): a relative phrase is mined relative to the
query time, an absolute one with its phrase, both checked against the profiled range, and an
activated one is what the retriever finds for the next question with the phrase."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agents.learn.mine import activate, is_candidate, mine_labeled
from agents.learn.mine.labeled import kind_of
from agents.learn.mine.periods import Span, column_periods, period_phrases, value_span
from agents.learn.mine.sql_facts import sql_facts
from indices.index_set import IndexSet
from kb.store import KnowledgeStore
from kb.target.database import Database
from tests.agents.learn.conftest import SPIDER, labeled, profiled
from ukf import BaseUKF, QueryContext

CONCERTS = "concert_singer"


@pytest.fixture
def concerts(tmp_path: Path) -> Iterator[tuple[KnowledgeStore, Database]]:
    store, database = profiled(tmp_path, SPIDER / CONCERTS / f"{CONCERTS}.sqlite", CONCERTS)
    yield store, database
    database.close()
    store.close()


def asked(question: str, sql: str, when: datetime) -> object:
    return labeled(question, sql, CONCERTS, context={"query_time": when})


def periods(store: KnowledgeStore) -> list[BaseUKF]:
    mined = store.iterate(source="auto", active=None)
    return [e for e in mined if kind_of(e) in ("period", "relative_period")]


JUNE_2015 = datetime(2015, 6, 1, 9, tzinfo=UTC)
LAST_YEAR = "SELECT count(*) FROM concert WHERE Year = '2014'"


def test_a_relative_phrase_is_mined_relative_to_the_query_time(concerts):
    store, db = concerts
    exp = asked("How many concerts were there last year?", LAST_YEAR, JUNE_2015)
    report = mine_labeled(store, [exp], job_id="job-p", targets={CONCERTS: db})

    (entry,) = periods(store)
    assert kind_of(entry) == "relative_period" and report.mined["relative_period"] == 1
    assert entry.name == "last year"
    condition = entry.content_resources["condition"]
    assert condition == "Year = the year before the one holding the query month (written YYYY)"
    assert "2014" not in condition  # never the literal year
    facts = entry.content_resources["period"]
    assert facts["phrase"] == "last_year" and facts["relative"] and facts["column"] == "Year"
    assert "asked at 2015-06-01" in entry.description and "'2014'" in entry.description
    assert entry.parents == [exp.id] and is_candidate(entry)
    assert entry.metadata["mining"]["job_id"] == "job-p"
    (column,) = [store.get(r.object) for r in entry.related]
    assert (column.type, column.content_resources["table"]) == ("column", "concert")


def test_the_same_relative_phrase_asked_a_year_later_merges_into_one_entry(concerts):
    store, db = concerts
    exps = [
        asked("How many concerts were there last year?", LAST_YEAR, JUNE_2015),
        asked(
            "Which concerts took place last year?",
            "SELECT concert_Name FROM concert WHERE Year = '2015'",
            datetime(2016, 2, 10, tzinfo=UTC),
        ),
    ]
    report = mine_labeled(store, exps, targets={CONCERTS: db})

    (entry,) = periods(store)
    assert report.merge == {"inserted": 1} and len(report.candidate_ids) == 1
    assert set(entry.parents) == {e.id for e in exps}


def test_a_phrase_the_sql_does_not_cover_yields_no_period(concerts):
    store, db = concerts
    wrong_year = asked(
        "How many concerts were there last year?",
        "SELECT count(*) FROM concert WHERE Year = '2015'",
        JUNE_2015,
    )
    mine_labeled(store, [wrong_year], targets={CONCERTS: db})
    assert periods(store) == []


def test_absolute_years_are_mined_with_their_phrase(concerts):
    store, db = concerts
    exps = [
        asked(
            "What are the names of the concerts held in 2015?",
            "SELECT concert_Name FROM concert WHERE Year = '2015'",
            JUNE_2015,
        ),
        asked(
            "How many concerts since 2015?",
            "SELECT count(*) FROM concert WHERE Year >= '2015'",
            JUNE_2015,
        ),
    ]
    report = mine_labeled(store, exps, targets={CONCERTS: db})

    found = {e.name: e for e in periods(store)}
    assert set(found) == {"2015", "since 2015"} and report.mined["period"] == 2
    assert found["2015"].content_resources["condition"] == "Year = '2015'"
    assert found["since 2015"].content_resources["condition"] == "Year >= '2015'"
    assert not found["2015"].content_resources["period"]["relative"]


def test_a_period_outside_the_profiled_range_is_dropped(concerts):
    store, db = concerts
    exp = asked(
        "How many concerts were held in 1990?",
        "SELECT count(*) FROM concert WHERE Year = '1990'",
        JUNE_2015,
    )
    report = mine_labeled(store, [exp], targets={CONCERTS: db})
    assert report.dropped["period_out_of_range"] == 1 and periods(store) == []


def test_an_activated_relative_period_is_found_for_the_next_question(concerts):
    store, db = concerts
    exp = asked("How many concerts were there last year?", LAST_YEAR, JUNE_2015)
    (candidate,) = mine_labeled(store, [exp], targets={CONCERTS: db}).candidate_ids
    retriever = IndexSet.build(store, vectors=False, experiences=False).retriever()
    later = QueryContext(database=CONCERTS, query_time=datetime(2016, 3, 1, tzinfo=UTC))
    question = "List the themes of the concerts of last year."
    assert candidate not in retriever.retrieve(question, later).ids()

    activate(store, [candidate])
    evidence = retriever.retrieve(question, later)
    (item,) = [i for i in evidence.items if i.entry.id == candidate]
    assert item.spans == [(question.index("last year"), question.index("last year") + 9)]
    assert "the year before" in item.text


# --------------------------------------------------------------------- the two sides
def test_sql_periods_combine_the_bounds_of_one_column():
    facts = sql_facts(
        "SELECT SUM(amount) FROM sales WHERE order_date >= '2023-01-01' "
        "AND order_date < '2024-01-01' AND month IN ('2024-05', '2024-06') AND year = 2022"
    )
    found = {p.column: p for p in column_periods(facts.predicates)}
    assert found["order_date"].span == value_span(2023)[1]  # type: ignore[index]
    assert found["order_date"].shape == "YYYY-MM-DD"
    assert (found["month"].shape, found["year"].shape) == ("YYYY-MM", "YYYY")
    assert value_span("202406") == ("YYYYMM", value_span("2024-06")[1])  # type: ignore[index]
    assert value_span(5000) is None and value_span("north carolina") is None


def test_question_phrases_resolve_at_the_query_time():
    when = datetime(2024, 7, 3, tzinfo=UTC)
    found = {
        p.text: p
        for p in period_phrases(
            "sales last month vs June 2023, since 2020, between 2019 and 2021", when
        )
    }
    assert found["last month"].relative and found["last month"].span == Span(
        datetime(2024, 6, 1).date(), datetime(2024, 6, 30).date()
    )
    assert not found["June 2023"].relative
    assert found["since 2020"].span == Span(datetime(2020, 1, 1).date(), None)
    assert found["between 2019 and 2021"].span.last == datetime(2021, 12, 31).date()


def test_dates_cast_in_postgresql_read_as_their_strings():
    facts = sql_facts(
        "SELECT 1 FROM orders WHERE ordered >= DATE '2024-01-01' "
        "AND ordered < CAST('2025-01-01' AS DATE)",
        "postgres",
    )
    (period,) = column_periods(facts.predicates)
    assert (period.column, period.span) == ("ordered", value_span(2024)[1])  # type: ignore[index]
