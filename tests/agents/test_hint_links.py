"""Question-word links kept as hints: not the ones inside a longer link, not unanchored
readings of an ambiguous phrase."""

from __future__ import annotations

from agents.rag.hint_links import precise_links
from indices.evidence import EvidenceItem
from indices.hits import Hit
from ukf import ColumnUKF, EnumUKF, TableUKF

QUESTION = "How many TV Channels use the English language?"


def linked(entry, question: str, phrase: str) -> EvidenceItem:
    start = question.index(phrase)
    hit = Hit(entry.id, 1.0, "span", span=(start, start + len(phrase)), phrase=phrase)
    return EvidenceItem(entry, hits=[hit])


def test_a_link_inside_a_longer_link_to_another_table_is_dropped():
    channel = TableUKF.create("tv", "TV_Channel")
    series = TableUKF.create("tv", "TV_series")
    language = ColumnUKF.create(channel, "Language")
    english = EnumUKF.create(language, "English")
    items = [
        linked(channel, QUESTION, "TV Channels"),
        linked(ColumnUKF.create(series, "Channel"), QUESTION, "Channels"),
        linked(language, QUESTION, "language"),
        linked(english, QUESTION, "English"),
    ]
    kept = [i.entry.name for i in precise_links(items)]
    assert kept == [items[0].entry.name, items[2].entry.name, items[3].entry.name]
    # the same inner phrase into the table the longer phrase names stays
    own = linked(ColumnUKF.create(channel, "series_name"), QUESTION, "Channels")
    assert own in precise_links([*items, own])


def test_an_ambiguous_phrase_keeps_the_reading_the_question_anchors():
    question = "Find the names of the visitors whose level is higher than 4"
    visitor, museum = TableUKF.create("m", "visitor"), TableUKF.create("m", "museum")
    items = [
        linked(visitor, question, "visitors"),
        linked(ColumnUKF.create(museum, "Name"), question, "names"),
        linked(ColumnUKF.create(visitor, "Name"), question, "names"),
    ]
    kept = precise_links(items)
    assert [i.entry.content_resources["table"] for i in kept] == ["visitor", "visitor"]
    # nothing anchors either table: both readings stay
    both = precise_links(items[1:])
    assert {i.entry.content_resources["table"] for i in both} == {"museum", "visitor"}


def test_entries_without_spans_and_other_types_are_not_links():
    table = TableUKF.create("m", "visitor")
    found_by_vector = EvidenceItem(table, hits=[Hit(table.id, 0.5, "vector")])
    assert precise_links([found_by_vector]) == []
