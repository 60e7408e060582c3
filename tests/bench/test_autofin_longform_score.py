"""Specification of `bench.autofin.longform_score`: whether an analysis answer names the
planted fact, on crafted answers (right and wrong driver, forecast inside and outside the
interval, peak month, trend direction, discount band), and the share found per type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.autofin.__main__ import main
from bench.autofin.longform_score import Verdict, numbers_in, score, score_answer, shares

DRIVER = {"kind": "driver", "brand": "AU", "region": "EUR", "model": "AU5"}
PEAK = {"kind": "peak_month", "brand": "HX", "month": 11}
TREND = {"kind": "trend_up", "brand": "ZP", "region": "EUR"}
FORECAST = {
    "kind": "forecast",
    "brand": "ZP",
    "region": "EUR",
    "period": "202601",
    "value": 74_572_320.98,
    "lower": 65_871_922.95,
    "upper": 84_421_872.13,
}
BAND = {"kind": "discount_band", "brand": "TI", "band": "15-20%", "low_pct": 15.0, "high_pct": 20.0}


def question(expects: dict[str, Any], kind: str = "diagnostic", qid: str = "q1") -> dict:
    return {"id": qid, "question": f"question {qid}?", "type": kind, "expects": expects}


def answer(short: str, *findings: str, **extra: Any) -> dict[str, Any]:
    return {"short_answer": short, "findings": [{"text": f} for f in findings], **extra}


def found(expects: dict[str, Any], short: str, *findings: str, **extra: Any) -> bool:
    return score_answer(question(expects), answer(short, *findings, **extra)).found


def test_the_planted_driver_is_found_by_code_name_or_nickname() -> None:
    assert found(DRIVER, "Margin fell because of Europe.", "AU5 sold at a lower price.")
    assert found(DRIVER, "The Aurora 5 in the EUR region lost 6.7 million of gross profit.")
    assert found(DRIVER, "Dawn sedans sold in continental Europe drove the drop.")


def test_a_wrong_or_half_driver_is_not_found() -> None:
    assert not found(DRIVER, "The drop came from UK & Ireland and the Aurora Q5.")
    assert not found(DRIVER, "The drop came from Europe.")  # no model
    # the planted pair named only after a wrong one
    assert not found(DRIVER, "Mostly North America (AUQ8), then Europe with AU5.")
    # an amount in euros is not the region
    assert not found(DRIVER, "AU5 lost EUR 5 million in UK & Ireland.")


def test_a_forecast_inside_the_interval_is_found_and_one_outside_is_not() -> None:
    assert found(FORECAST, "Revenue will be about USD 74.6 million in January 2026.")
    assert found(FORECAST, "We forecast $80,100,000 for next month.")
    assert not found(FORECAST, "The forecast for January 2026 is USD 95.2 million.")
    assert not found(FORECAST, "Revenue was 74.1 million in December 2025.")  # not a forecast
    # a finding's own numbers count when the finding is a forecast
    chart = {"text": "The forecast is in the chart.", "numbers": [70_000_000.0]}
    assert score_answer(question(FORECAST), {"findings": [chart]}).found
    history = {"text": "Revenue in the chart.", "numbers": [70_000_000.0]}
    assert not score_answer(question(FORECAST), {"findings": [history]}).found


def test_the_peak_month_is_read_from_the_peak_sentence() -> None:
    assert found(PEAK, "Sales are lowest in August. They peak in November every year.")
    assert found(PEAK, "The highest month is 2024-11 with 160 million.")
    assert not found(PEAK, "Revenue peaks in September.")
    assert not found(PEAK, "Helix sells cars in November and December.")  # no peak word


def test_the_trend_direction_is_the_first_direction_word() -> None:
    assert found(TREND, "Revenue grew 45% a year since 2021.")
    assert not found(TREND, "Revenue declined after a brief increase.")
    assert not found(TREND, "Revenue was 74 million.")


def test_the_discount_band_is_the_first_percentage_in_a_discount_sentence() -> None:
    assert found(BAND, "Cut the 15-20% discount band: it sold 20% fewer units.")
    assert found(BAND, "Discounts above 15% buy no volume.")
    assert found(BAND, "Invoices discounted at 17.5% have the lowest margin.")
    assert not found(BAND, "Cut the 10-15% discount band.")
    assert not found(BAND, "Cut discounts of 5 to 10 percent.")
    assert not found(BAND, "Fleet customers earn 12% gross margin.")  # no discount sentence


def test_numbers_carry_their_scale() -> None:
    assert numbers_in("USD 74.6 million, $1.2bn, 3k and 1,234.5") == [
        74_600_000.0,
        1_200_000_000.0,
        3_000.0,
        1_234.5,
    ]


def test_missing_and_refused_answers_are_not_found_and_shares_are_per_type() -> None:
    questions = [
        question(DRIVER, "diagnostic", "a"),
        question(FORECAST, "predictive", "b"),
        question(BAND, "prescriptive", "c"),
        question(PEAK, "descriptive", "d"),
    ]
    answers = [
        {"id": "a", **answer("Europe's AU5 drove it.")},
        {"question": "question b?", **answer("", refused="no time column")},  # by its text
        {"id": "d", **answer("Revenue peaks in November.")},
    ]
    verdicts = score(questions, answers)
    assert [v.found for v in verdicts] == [True, False, False, True]
    assert verdicts[1].why.startswith("refused") and verdicts[2].why == "no answer"
    table = shares(verdicts)
    assert table["diagnostic"] == {"found": 1, "total": 1, "share": 1.0}
    assert table["predictive"]["share"] == 0.0 and table["all"]["share"] == 0.5


def test_an_unknown_fact_kind_is_an_error_naming_the_question() -> None:
    with pytest.raises(ValueError, match=r"q1.*'colour'"):
        score_answer(question({"kind": "colour"}), answer("red"))


def test_the_command_prints_shares_and_writes_verdicts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "\n".join(json.dumps(q) for q in [question(DRIVER, "diagnostic", "a")]) + "\n"
    )
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"id": "a", **answer("UK & Ireland, AUQ5.")}) + "\n")
    out = tmp_path / "v.json"
    argv = ["score-longform", "--questions", str(questions), "--answers", str(answers)]
    assert main([*argv, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "diagnostic" in printed and "missed: first region UKI, first model AUQ5" in printed
    payload = json.loads(out.read_text())
    assert payload["shares"]["all"] == {"found": 0, "total": 1, "share": 0.0}
    assert Verdict(**payload["verdicts"][0]).kind == "driver"
    # a partial run: the unanswered question is left out with --answered-only
    questions.write_text(
        "".join(json.dumps(question(DRIVER, "diagnostic", q)) + "\n" for q in ("a", "b"))
    )
    assert main([*argv, "--json", str(out)]) == 0
    assert json.loads(out.read_text())["shares"]["all"]["total"] == 2
    assert main([*argv, "--json", str(out), "--answered-only"]) == 0
    assert json.loads(out.read_text())["shares"]["all"]["total"] == 1
