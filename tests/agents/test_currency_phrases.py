"""The currency of an answer: named in the question, else the asker's profile currency."""

from __future__ import annotations

import pytest

from agents.rag.currency_phrases import (
    answer_currency_spans,
    describe_currency,
    is_local_currency_column,
    named_currency,
)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Borealis revenue in euros?", ("EUR", "euros")),
        ("Revenue in US dollars, highest first", ("USD", "US dollars")),
        ("Helix revenue in yen this year?", ("JPY", "yen")),
        ("Fiscal year to date in pounds?", ("GBP", "in pounds")),
        ("Revenue in JPY?", ("JPY", "JPY")),
        ("Revenue in Australia, in local currency?", ("local", "local currency")),
        ("Revenue over €1m?", ("EUR", "€")),
        ("Borealis retail revenue?", None),
        ("Which pound did the dog come from?", None),  # "pound" only counts after "in"
        ("Who won the award in real terms?", None),
    ],
)
def test_named_currencies(question, expected):
    assert named_currency(question) == expected


def test_the_description_prefers_the_question_then_the_profile():
    assert describe_currency("Revenue in euros?", {"currency": "USD"}) == '"euros": amounts in EUR.'
    assert describe_currency("Revenue?", {"currency": "jpy"}) == (
        "The question names no currency: amounts in the user's currency JPY."
    )
    assert "local currency" in describe_currency("Revenue in local currency?", {})
    assert describe_currency("Revenue?", {"region": "EUR"}) == ""
    assert describe_currency("Revenue?", {"currency": "not a code"}) == ""
    assert describe_currency("Revenue?", None) == ""


def test_the_description_names_the_per_currency_columns_shown():
    columns = ["period", "ptd_amt_usd", "ptd_amt_eur", "ptd_amt_lc"]
    assert describe_currency("Revenue in euros?", {}, columns) == (
        '"euros": amounts in EUR: the *_eur columns.'
    )
    assert describe_currency("Revenue?", {"currency": "USD"}, columns).endswith(
        "currency USD: the *_usd columns."
    )
    assert describe_currency("Revenue in local currency?", {}, columns).endswith(
        "local currency: the *_lc columns."
    )
    assert describe_currency("Revenue in yen?", {}, columns) == '"yen": amounts in JPY.'


def test_the_answer_currency_is_located_in_the_question_and_local_columns_are_told_apart():
    question = "What was Aurora's revenue for period 202411 in JPY?"
    (span,) = answer_currency_spans(question)
    assert question[span[0] : span[1]] == "JPY"
    assert answer_currency_spans("Revenue in local currency?") == []
    assert answer_currency_spans("Revenue?") == []
    assert is_local_currency_column("local_currency") and is_local_currency_column("LocalCurrency")
    assert not is_local_currency_column("currency") and not is_local_currency_column("ptd_amt_lc")
