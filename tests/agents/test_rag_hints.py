"""Hint lines: what is linked, what is left out, in which order and within which budget."""

from __future__ import annotations

from agents.rag.hints import compose_hints, link_text, used_knowledge
from indices.evidence import EvidenceItem
from indices.hits import Hit
from ukf import ColumnUKF, EnumUKF, RuleUKF, TableUKF

QUESTION = "How many singers from France sang in 2014?"


def linked(entry, phrase: str) -> EvidenceItem:
    start = QUESTION.index(phrase)
    hit = Hit(entry.id, 1.0, "span", span=(start, start + len(phrase)), phrase=phrase)
    return EvidenceItem(entry, hits=[hit])


singer = TableUKF.create("concert", "singer")
country = ColumnUKF.create(singer, "Country")
france = EnumUKF.create(country, "France")
concert = TableUKF.create("concert", "concert")
year = EnumUKF.create(ColumnUKF.create(concert, "Year"), "2014")


def test_links_name_the_question_words_and_what_they_point_at():
    france_link = "\"France\" -> singer.Country = 'France'"
    assert link_text(linked(france, "France"), QUESTION) == france_link
    assert link_text(linked(singer, "singers"), QUESTION) == '"singers" -> table singer'
    assert link_text(EvidenceItem(country), QUESTION) == "found by search -> column singer.Country"
    used = used_knowledge(linked(france, "France"), QUESTION)
    assert used.phrases == ["France"] and used.spans == [(22, 28)]


def test_links_into_hidden_tables_and_time_phrases_are_left_out():
    items = [linked(france, "France"), linked(year, "2014")]
    start = QUESTION.index("2014")
    assert compose_hints(QUESTION, items, shown_tables={"singer"}, budget_tokens=100) == [
        "\"France\" -> singer.Country = 'France'"
    ]
    hints = compose_hints(
        QUESTION,
        items,
        shown_tables={"singer", "concert"},
        time_spans=[(start, start + 4)],
        budget_tokens=100,
    )
    assert hints == ["\"France\" -> singer.Country = 'France'"]


def test_first_lines_lead_and_what_does_not_fit_the_budget_is_left_out():
    rule = RuleUKF.create("Active", "A singer is active when " + "they sang recently " * 30)
    items = [EvidenceItem(rule), linked(france, "France")]
    hints = compose_hints(
        QUESTION,
        items,
        shown_tables={"singer"},
        first=["profile region=EU -> singer.Region = 'EU'"],
        budget_tokens=20,
    )
    # the rule alone is over the budget; the short link still fits
    assert hints == [
        "profile region=EU -> singer.Region = 'EU'",
        "\"France\" -> singer.Country = 'France'",
    ]
    roomy = compose_hints(QUESTION, items, shown_tables={"singer"}, budget_tokens=1000)
    assert len(roomy) == 2 and any(h.startswith("Rule (general) Active: A singer") for h in roomy)
