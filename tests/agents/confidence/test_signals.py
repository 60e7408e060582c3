"""Each confidence signal on crafted questions over the real concert_singer knowledge base."""

from __future__ import annotations

import pytest

from agents.answer import Candidate
from agents.confidence.signals import answer_signals, content_words
from agents.confidence.vocabulary import DatabaseVocabulary
from agents.rag.agent import RagAgent, RagOptions
from agents.rag.schema_slice import SchemaCatalog
from agents.sql.vote import vote
from indices.embeddings import HashingEmbedder
from kb.target.results import Results
from ukf import ExperienceUKF, QueryContext, SynonymUKF


def _rag(concert, question: str):
    store, _database, retriever = concert
    agent = RagAgent(retriever, SchemaCatalog(store, "concert_singer"), RagOptions())
    return agent.run(question, QueryContext(database="concert_singer"))


def _candidate(sql: str, rows, columns=("x",), *, error=None, logprobs=None, repairs=0, sample=0):
    results = Results(columns=list(columns), rows=list(rows), error=error)
    candidate = Candidate(sql, results=results, repairs=repairs, sample=sample)
    if logprobs:
        candidate.logprob_mean = sum(logprobs) / len(logprobs)
        candidate.logprob_min = min(logprobs)
    return candidate


def _signals(concert, question, candidates, **options):
    store = concert[0]
    rag = _rag(concert, question)
    snapshot = DatabaseVocabulary(store, "concert_singer").snapshot()
    return answer_signals(question, rag, candidates, vote(candidates), snapshot, **options)


def test_content_words_leave_out_asking_words_numbers_and_lemmatise():
    words = [w for w, _, _ in content_words("What is the total number of singers in 2014?")]
    assert words == ["singer"]
    assert [w for w, _, _ in content_words("Show the youngest singers' songs")] == [
        "singer",
        "song",
    ]


def test_a_question_the_database_covers_has_full_coverage(concert):
    signals = _signals(
        concert, "How many singers are from France?", [_candidate("SELECT 1", [(4,)])]
    )
    assert signals.unmatched == [] and signals.features["span_coverage"] == 1.0
    assert signals.features["unmatched_content_words"] == 0.0


def test_a_word_nothing_in_the_database_names_is_unmatched(concert):
    signals = _signals(
        concert, "What is the average salary of singers?", [_candidate("SELECT 1", [(4,)])]
    )
    assert signals.unmatched == ["salary"]
    assert signals.features["span_coverage"] == pytest.approx(0.5)


def test_an_out_of_scope_ask_matches_nothing(concert):
    signals = _signals(concert, "write me a poem about the sea", [_candidate("SELECT 1", [(1,)])])
    assert signals.features["span_coverage"] == 0.0 and set(signals.unmatched) == {"poem", "sea"}


def test_a_year_outside_the_data_is_flagged_with_the_span_the_data_covers(concert):
    question = "How many concerts were held in 1850?"
    signals = _signals(concert, question, [_candidate("SELECT 1", [(0,)])])
    assert signals.features["period_outside_data"] == 1.0
    # concert.Year and singer.Song_release_year, both years
    assert signals.period == "1850" and signals.data_span == "1992 to 2016"
    inside = _signals(concert, "How many concerts were held in 2014?", [_candidate("S", [(3,)])])
    assert inside.features["period_outside_data"] == 0.0 and inside.period is None


def test_empty_degenerate_and_misshapen_results(concert):
    count = "How many singers are there?"
    assert _signals(concert, count, [_candidate("S", [])]).features["empty_result"] == 1.0
    nulls = _signals(concert, count, [_candidate("S", [(None,)])]).features
    assert nulls["degenerate_result"] == 1.0 and nulls["empty_result"] == 0.0
    many = _signals(concert, count, [_candidate("S", [(1,), (2,), (3,)])]).features
    assert many["shape_mismatch"] == 1.0
    one = _signals(concert, count, [_candidate("S", [(6,)])]).features
    assert one["shape_mismatch"] == 0.0 and one["degenerate_result"] == 0.0
    listing = "List the names of all singers"
    assert _signals(concert, listing, [_candidate("S", [(6,)])]).features["shape_mismatch"] == 1.0
    grouped = "How many singers are there in each country?"
    rows = [("France", 2), ("Spain", 1)]
    assert (
        _signals(concert, grouped, [_candidate("S", rows, ("c", "n"))]).features["shape_mismatch"]
        == 0.0
    )


def test_a_measure_answered_with_a_name_is_flagged(concert):
    how_old = "How old is Joe Sharp?"
    named = [_candidate("S", [("Joe Sharp", 52)], ("name", "age"))]
    assert _signals(concert, how_old, named).features["text_for_measure"] == 1.0
    number = [_candidate("S", [(52,)], ("age",))]
    assert _signals(concert, how_old, number).features["text_for_measure"] == 0.0
    as_text = [_candidate("S", [("52",)], ("age",))]  # a number stored as text
    assert _signals(concert, how_old, as_text).features["text_for_measure"] == 0.0
    grouped = "How many singers are there in each country?"
    rows = [_candidate("S", [("France", 2)], ("country", "n"))]
    assert _signals(concert, grouped, rows).features["text_for_measure"] == 0.0
    named_asked = "What is the name of the oldest singer?"
    answer = [_candidate("S", [("Joe Sharp",)], ("name",))]
    assert _signals(concert, named_asked, answer).features["text_for_measure"] == 0.0


def test_what_the_winning_sql_reads_is_a_signal(concert):
    question = "What is the country of Joe Sharp?"
    echo = _candidate("SELECT name FROM singer WHERE name = 'Joe Sharp'", [("Joe Sharp",)])
    features = _signals(concert, question, [echo]).features
    assert features["projection_echoes_filter"] == 1.0
    assert features["attribute_via_reference"] == 0.0  # the schema is known
    right = _candidate("SELECT country FROM singer WHERE name = 'Joe Sharp'", [("Netherlands",)])
    assert _signals(concert, question, [right]).features["projection_echoes_filter"] == 0.0


def test_a_join_that_links_nothing_is_counted(concert):
    question = "What are the names of singers in concerts?"
    crossed = _candidate(
        "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T2.singer_id = "
        "T2.singer_id",
        [("Joe Sharp",)],
    )
    assert _signals(concert, question, [crossed]).features["unlinked_joins"] == 1.0
    linked = _candidate(
        "SELECT T1.name FROM singer AS T1 JOIN singer_in_concert AS T2 ON T1.singer_id = "
        "T2.singer_id",
        [("Joe Sharp",)],
    )
    assert _signals(concert, question, [linked]).features["unlinked_joins"] == 0.0
    unparsed = _signals(concert, question, [_candidate("SELECT * FROM (", [(6,)])]).features
    assert "unlinked_joins" not in unparsed  # an SQL that does not parse is not judged


def test_log_probabilities_repairs_and_value_corrections_of_the_winner(concert):
    winner = _candidate("S", [(6,)], logprobs=[-0.1, -0.3, -2.0], repairs=2)
    winner.notes.append("predicate value corrected: 'france' -> 'France'")
    f = _signals(concert, "How many singers are there?", [winner]).features
    assert f["logprob_mean"] == pytest.approx(-0.8) and f["logprob_min"] == -2.0
    assert f["repairs"] == 2.0 and f["value_corrected"] == 1.0
    plain = _signals(concert, "How many singers are there?", [_candidate("S", [(6,)])]).features
    assert "logprob_mean" not in plain and plain["value_corrected"] == 0.0


def test_vote_share_and_distinct_results_only_with_several_samples(concert):
    question = "How many singers are there?"
    one = _signals(concert, question, [_candidate("S", [(6,)])]).features
    assert "vote_share" not in one and one["samples"] == 1.0
    split = [
        _candidate("A", [(6,)], sample=0),
        _candidate("B", [(6,)], sample=1),
        _candidate("C", [(5,)], sample=2),
        _candidate("D", [], error="no such column", sample=3),
    ]
    f = _signals(concert, question, split).features
    assert f["vote_share"] == 0.5 and f["distinct_results"] == 2.0
    assert f["failed_share"] == 0.25 and f["samples"] == 4.0


def test_no_candidate_ran(concert):
    failed = [_candidate("S", [], error="syntax error")]
    f = _signals(concert, "How many singers are there?", failed).features
    assert f["no_result"] == 1.0 and f["failed_share"] == 1.0 and "empty_result" not in f


def test_nearest_labeled_example_and_its_skeleton(concert):
    store = concert[0]
    store.upsert(
        ExperienceUKF.create(
            "How many singers are there?",
            "SELECT count(*) FROM singer",
            database="concert_singer",
            labeled=True,
        )
    )
    from indices.index_set import IndexSet

    fresh = (store, concert[1], IndexSet.build(store, HashingEmbedder()).retriever())
    same = _signals(
        fresh, "How many singers do we have?", [_candidate("SELECT count(*) FROM singer", [(6,)])]
    )
    assert same.features["nearest_example_similarity"] > 0.5
    assert same.features["same_skeleton_example"] == 1.0
    other = _signals(
        fresh, "How many singers do we have?", [_candidate("SELECT name FROM singer", [("a",)])]
    )
    assert other.features["same_skeleton_example"] == 0.0


def test_two_meanings_of_a_phrase_are_an_ambiguity(concert):
    store, _db, _ = concert
    singer_age = store.get(_column_id(store, "singer", "Age"))
    capacity = store.get(_column_id(store, "stadium", "Capacity"))
    store.upsert_many(
        [
            SynonymUKF.create("size", singer_age, database="concert_singer", variant="age"),
            SynonymUKF.create("size", capacity, database="concert_singer", variant="seats"),
        ]
    )
    from indices.index_set import IndexSet

    fresh = (store, concert[1], IndexSet.build(store).retriever())
    signals = _signals(fresh, "What is the biggest size?", [_candidate("S", [(1,)])])
    assert signals.features["ambiguous_phrases"] == 1.0
    (ambiguity,) = signals.ambiguities
    assert ambiguity.phrase == "size" and len(ambiguity.meanings) == 2
    one = _signals(fresh, "How many singers are there?", [_candidate("S", [(1,)])])
    assert one.features["ambiguous_phrases"] == 0.0


def _column_id(store, table: str, column: str) -> str:
    for entry in store.iterate(type="column"):
        res = entry.content_resources
        if res.get("table") == table and res.get("column") == column:
            return entry.id
    raise AssertionError(f"no column {table}.{column}")


def test_a_time_window_outside_the_data_is_flagged(concert):
    from agents.rag.agent import RagContext, _QuestionFacts
    from agents.rag.time_phrases import TimeWindow
    from indices.evidence import Evidence

    question = "How many concerts in March 2031?"
    start = question.index("March")
    window = TimeWindow(
        "March 2031", "month", "March 2031", "203103", "203103", span=(start, start + 10)
    )
    rag = RagContext(
        question, "concert_singer", Evidence(question), "", facts=_QuestionFacts(windows=[window])
    )
    snapshot = DatabaseVocabulary(concert[0], "concert_singer").snapshot()
    candidates = [_candidate("S", [(0,)])]
    signals = answer_signals(question, rag, candidates, vote(candidates), snapshot)
    assert signals.features["period_outside_data"] == 1.0 and signals.period == "March 2031"
    inside = TimeWindow(
        "June 2015", "month", "June 2015", "201506", "201506", span=(start, start + 9)
    )
    rag.facts = _QuestionFacts(windows=[inside])
    signals = answer_signals(question, rag, candidates, vote(candidates), snapshot)
    assert signals.features["period_outside_data"] == 0.0
