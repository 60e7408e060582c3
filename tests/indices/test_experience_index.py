"""The experience index: value sketches, the skeleton metric, nearest experiences by SQL shape."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from indices.experience_index import ExperienceIndex
from indices.experience_metric import SkeletonMetric
from indices.experience_skeleton import skeleton_of, sql_skeleton
from indices.sketch import QuerySketcher, entity_of, value_labels
from indices.string import StringIndex
from tests.indices.test_vector_index import WordHashEmbedder
from ukf import ColumnUKF, EnumUKF, ExperienceUKF, TableUKF

POPULATION = "SELECT population FROM state WHERE state_name = '{}'"
AREA = "SELECT area FROM state WHERE state_name = '{}'"
INTERVAL_S = 2.0  # the refit interval of the deferred-refit test


def _schema():
    state = TableUKF.create("geo", "state")
    name = ColumnUKF.create(state, "state_name")
    highest = ColumnUKF.create(state, "highest_point", synonyms=["highest point"])
    border = TableUKF.create("geo", "border_info")
    borders = ColumnUKF.create(border, "border")
    city = TableUKF.create("geo", "city")
    city_state = ColumnUKF.create(city, "state_name")
    values = [
        EnumUKF.create(name, "texas"),
        EnumUKF.create(borders, "texas"),  # in two columns named state_name, one named border
        EnumUKF.create(city_state, "texas"),
        EnumUKF.create(name, "new mexico", synonyms=["nm"]),
        EnumUKF.create(highest, "highest point"),  # a value spelled like its column
        EnumUKF.create(highest, "long"),
    ]
    return [state, name, highest, border, borders, city, city_state, *values]


def _sketcher(entries, typed):
    strings = StringIndex()
    strings.add([(e.id, [e.name, *e.synonyms]) for e in entries])
    strings.wait()
    entities = {e.id: entity_of(e) for e in entries}
    return QuerySketcher(strings, label=value_labels(entities.get, typed=typed))


def test_value_sketches_hide_values_only_and_can_name_their_column():
    entries = _schema()
    typed, plain = _sketcher(entries, typed=True), _sketcher(entries, typed=False)
    assert typed.sketch("biggest city in Texas") == "biggest city in state name"
    assert plain.sketch("biggest city in Texas") == "biggest city in [ENUM]"
    assert typed.sketch("population of NM in 2020") == "population of state name in [VALUE]"
    # table and column words stay, even when a value is spelled the same
    assert typed.sketch("the highest point of state") == "the highest point of state"
    # same lemmas are not the value: "longest" is not the value "long"
    assert typed.sketch("the longest river") == "the longest river"


def test_skeletons_drop_literals_and_only_labeled_experiences_have_one():
    assert sql_skeleton(POPULATION.format("texas")) == sql_skeleton(POPULATION.format("utah"))
    assert sql_skeleton(POPULATION.format("x")) != sql_skeleton(AREA.format("x"))
    labeled = ExperienceUKF.create("q", POPULATION.format("texas"), labeled=True)
    logged = ExperienceUKF.create("q", POPULATION.format("texas"))
    assert skeleton_of(labeled) == "select population from state where state_name = ?"
    assert skeleton_of(logged) is None
    # SQLAlchemy backend names and unknown dialects are read too
    shape = "select population from state where state_name = ?"
    on_postgres = ExperienceUKF.create(
        "q", POPULATION.format("t"), dialect="postgresql", labeled=True
    )
    assert skeleton_of(on_postgres) == shape
    assert sql_skeleton(POPULATION.format("t"), "no-such-dialect") == shape


def _leave_one_out(vectors: np.ndarray, groups: np.ndarray) -> float:
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    return float(np.mean(groups[sims.argmax(axis=1)] == groups))


def test_the_metric_shrinks_what_varies_within_a_skeleton():
    rng = np.random.default_rng(7)
    groups = np.repeat(np.arange(6), 5)
    signal = np.zeros((30, 16))
    signal[:, :6] = np.eye(6)[groups]  # what decides the skeleton
    noise = np.zeros((30, 16))
    noise[:, 6:] = rng.normal(scale=1.5, size=(30, 10))  # what varies within one
    vectors = (signal + noise).astype(np.float32)
    skeletons = [f"s{g}" for g in groups]
    metric = SkeletonMetric.fit(vectors, skeletons)
    assert metric.groups == 6 and metric.samples == 30
    plain = SkeletonMetric().transform(vectors)
    whitened = metric.transform(vectors)
    assert _leave_one_out(plain, groups) < 0.8
    assert _leave_one_out(whitened, groups) == 1.0


def test_the_metric_is_the_identity_without_two_experiences_of_one_skeleton():
    vectors = np.eye(3, dtype=np.float32)
    assert SkeletonMetric.fit(vectors, ["a", "b", "c"]).matrix is None
    with pytest.raises(ValueError, match="skeletons"):
        SkeletonMetric.fit(vectors, ["a", "b"])
    with pytest.raises(ValueError, match="shrinkage"):
        SkeletonMetric.fit(vectors, ["a", "a", "b"], shrinkage=0)


# Questions with the same SQL shape differ in filler words; the query shares its filler words
# with an experience of the other shape and only "population" with its own.
EXPERIENCES = [
    ("population of utah", POPULATION),
    ("population of ohio", POPULATION),
    ("population of iowa now please", POPULATION),
    ("area now please thanks", AREA),
    ("area of utah", AREA),
    ("area of ohio now", AREA),
]
QUERY = "population now please thanks"


def _experiences(labeled: bool, database: str = "geo"):
    return [
        ExperienceUKF.create(q, sql.format("x"), database=database, labeled=labeled)
        for q, sql in EXPERIENCES
    ]


def _index(store) -> ExperienceIndex:
    return ExperienceIndex.from_store(store, WordHashEmbedder(), StringIndex.from_store(store))


def test_labeled_experiences_teach_which_words_decide_the_sql_shape(store):
    store.upsert_many(_experiences(labeled=False))
    unlabeled = _index(store)
    assert unlabeled.metric.matrix is None  # nothing to learn from: plain cosine
    top = store.get(unlabeled.search(QUERY, k=1)[0].ukf_id)
    assert top.question == "area now please thanks"

    store.upsert_many(_experiences(labeled=True))  # the same entries, now labeled
    labeled = _index(store)
    assert labeled.metric.groups == 2
    hits = labeled.search(QUERY, k=2)
    assert [store.get(h.ukf_id).sql for h in hits] == [POPULATION.format("x")] * 2
    assert hits[0].reason == "vector" and hits[0].detail["index"] == "experience"


def test_search_keeps_to_the_database_and_follows_the_store(store):
    store.upsert_many(_experiences(labeled=True))
    other = ExperienceUKF.create(QUERY, AREA.format("x"), database="shop", labeled=True)
    store.upsert(other)
    index = _index(store)
    assert index.search(QUERY, k=1)[0].ukf_id == other.id  # the very same question
    scoped = index.search(QUERY, k=10, database="geo")
    assert other.id not in {h.ukf_id for h in scoped} and len(scoped) == 6

    fitted_on = index.metric.samples
    extra = [
        ExperienceUKF.create(f"population of {s} please", POPULATION.format(s), labeled=True)
        for s in ("maine", "idaho")
    ]
    store.upsert_many(extra)
    store.remove(other.id)
    assert index.refresh(store)
    assert index.size() == 8 and index.metric.samples == fitted_on + 1  # refitted: +2 -1
    assert other.id not in {h.ukf_id for h in index.search(QUERY, k=10)}


def test_new_values_in_the_schema_resketch_the_experiences(store):
    state = TableUKF.create("geo", "state")
    name = ColumnUKF.create(state, "state_name")
    store.upsert_many([state, name, *_experiences(labeled=True)])
    strings = StringIndex.from_store(store)
    embedder = WordHashEmbedder()
    index = ExperienceIndex.from_store(store, embedder, strings)
    assert index.views("population of utah")[0] == "population of utah"
    embedded = embedder.calls
    store.upsert(EnumUKF.create(name, "utah"))
    strings.refresh(store)
    index.refresh(store)
    assert index.views("population of utah") == (
        "population of state name",
        "population of [ENUM]",
        "population of utah",
    )
    # two questions name utah: their two sketches each are new texts, nothing else is
    assert embedder.calls == embedded + 4
    index.add(_experiences(labeled=True))  # replacing an experience by itself embeds nothing
    assert embedder.calls == embedded + 4 and index.size() == 6


def test_labeled_experiences_come_before_the_logged_unlabeled_questions(store):
    store.upsert_many(_experiences(labeled=True))
    asked = [
        ExperienceUKF.create(
            QUERY, None, database="geo", context={"user_profile": {"user": f"analyst{n}"}}
        )
        for n in range(8)
    ]
    store.upsert_many(asked)
    index = _index(store)
    plain = index.search(QUERY, k=3, database="geo", labeled_first=False)
    assert {h.ukf_id for h in plain} <= {e.id for e in asked}  # the very question, 8 times
    hits = index.search(QUERY, k=3, database="geo")
    assert all(store.get(h.ukf_id).content_resources.get("labeled") for h in hits)
    assert len(hits) == 3


def test_searches_go_on_while_the_metric_is_learned(store, monkeypatch):
    store.upsert_many(_experiences(labeled=True))
    index = _index(store)
    learning, release = threading.Event(), threading.Event()
    real_fit = SkeletonMetric.fit

    def slow_fit(*args, **kwargs):
        learning.set()
        assert release.wait(10)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(SkeletonMetric, "fit", staticmethod(slow_fit))
    fitting = threading.Thread(target=index.fit)
    fitting.start()
    assert learning.wait(10)
    searched: list = []
    searcher = threading.Thread(target=lambda: searched.append(index.search(QUERY, k=2)))
    searcher.start()
    searcher.join(5)
    release.set()
    fitting.join(10)
    assert searched and len(searched[0]) == 2  # answered while the fit was still waiting
    assert index.metric.groups == 2  # and the new metric is in place afterwards


def test_refits_wait_for_the_interval_then_run_in_the_background(store):
    # long enough that a loaded machine still refreshes well within it after the first fit
    store.upsert_many(_experiences(labeled=True))
    index = ExperienceIndex.from_store(
        store, WordHashEmbedder(), StringIndex.from_store(store), refit_interval_s=INTERVAL_S
    )
    fitted_on = index.metric.samples  # the first fit is not deferred
    assert fitted_on > 0 and not index.refit_pending
    more = [
        ExperienceUKF.create(f"population of {s} please", POPULATION.format(s), labeled=True)
        for s in ("maine", "idaho", "utah", "ohio")
    ]
    store.upsert_many(more)
    assert index.refresh(store)
    assert index.refit_pending and index.metric.samples == fitted_on  # due, but too soon
    assert index.search(QUERY, k=3)  # the new ones are searchable meanwhile
    deadline = time.monotonic() + INTERVAL_S + 10
    while time.monotonic() < deadline:
        if not index.refit_pending and index.metric.samples == fitted_on + 4:
            break
        threading.Event().wait(0.05)
    assert index.metric.samples == fitted_on + 4 and not index.refit_pending

    store.upsert_many(
        [
            ExperienceUKF.create(f"population of {s}", POPULATION.format(s), labeled=True)
            for s in ("iowa", "texas")
        ]
    )
    index.refresh(store)
    assert index.refit_pending
    index.close()  # replaced or stopped: the deferred refit is cancelled
    threading.Event().wait(INTERVAL_S + 0.5)
    assert index.metric.samples == fitted_on + 4 and not index.refit_pending
    with pytest.raises(ValueError):
        ExperienceIndex(WordHashEmbedder(), StringIndex.from_store(store), refit_interval_s=-1)
