"""BI-Bench scoring with a scripted judge: sentences checked by read-only SQL, 1–5 ratings."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.judge.answers import AnalysisAnswer
from bench.judge.bibench import aggregate, run_readonly, score_answer, sentences
from bench.judge.core import JudgeLog
from tests.bench.judge.judges import GARBAGE, by_prompt

# sentence -> the judge's claim reply
CLAIMS: dict[str, object] = {
    "APAC sold the most.": {
        "factual": True,
        "question": "Which region sold the most?",
        "sql": "SELECT region FROM sales ORDER BY amount DESC LIMIT 1;",
    },
    "APAC sales were 30.": {
        "factual": True,
        "question": "APAC sales?",
        "sql": "SELECT amount FROM sales WHERE region = 'APAC'",
    },
    "EMEA sales were 50.": {
        "factual": True,
        "question": "EMEA sales?",
        "sql": "SELECT amount FROM sales WHERE region = 'EMEA'",
    },
    "We recommend more focus on APAC.": {"factual": False},
    "Sales in APAC grew 3.5 times.": GARBAGE,
    "There are 2 regions.": {"factual": True, "question": "Regions?", "sql": "DELETE FROM sales"},
}
RATINGS = {"answerability": {"score": 4}, "relevance": GARBAGE, "presentation": {"score": 5}}


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "sales.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE sales (region TEXT, amount INTEGER)")
    connection.executemany("INSERT INTO sales VALUES (?, ?)", [("EMEA", 10), ("APAC", 30)])
    connection.commit()
    connection.close()
    return path


def decide(prompt: str) -> object:
    if "Is the sentence below a factual claim" in prompt:
        sentence = prompt.split("The sentence:\n")[1].split("\n")[0]
        return CLAIMS[sentence]
    if "Does the result support the claim" in prompt:
        return {"supported": "Claim: EMEA" not in prompt}
    criterion = prompt.split("Rate the answer's ")[1].split(":")[0]
    return RATINGS[criterion]


def answer(database: Path | None) -> AnalysisAnswer:
    return AnalysisAnswer(
        id="b1",
        question="Which region sells most?",
        type="descriptive",
        short_answer="APAC sold the most.",
        findings=tuple(list(CLAIMS)[1:]),
        database=database,
    )


def test_sentences() -> None:
    text = "Revenue was 3.5 million in Q3. EMEA fell! Why?\n- APAC rose 2.1% e.g. in May\n\n1. Done"
    assert sentences(text) == [
        "Revenue was 3.5 million in Q3.",
        "EMEA fell!",
        "Why?",
        "APAC rose 2.1% e.g. in May",
        "Done",
    ]


def test_factual_sentences_checked_by_sql_against_the_data(database: Path) -> None:
    judge = by_prompt(decide)
    judge_log = JudgeLog()

    scores = score_answer(answer(database), judge, judge_log)

    verdicts = {c.sentence: c.verdict for c in scores.checks}
    assert verdicts == {
        "APAC sold the most.": True,
        "APAC sales were 30.": True,
        "EMEA sales were 50.": False,
        "We recommend more focus on APAC.": None,
        "Sales in APAC grew 3.5 times.": False,
        "There are 2 regions.": False,
    }
    assert scores.factual_correctness == pytest.approx(2 / 5)
    assert scores.ratings == {"answerability": 4, "relevance": None, "presentation": 5}
    assert scores.failed_calls == 2
    refused = next(c for c in scores.checks if c.sentence == "There are 2 regions.")
    assert "readonly" in refused.error
    assert run_readonly(database, "SELECT COUNT(*) FROM sales") == ([(2,)], None)
    support = next(r for r in judge_log.records if r["step"] == "support")
    assert "('APAC',)" in support["messages"][1]["content"]
    claims = [r["messages"][1]["content"] for r in judge_log.records if r["step"] == "claim"]
    assert "CREATE TABLE sales (region TEXT, amount INTEGER);" in claims[0]
    # only the sentence differs: a model keeping its context (or prompt states) prefills the
    # schema once per answer, not once per sentence
    assert len({claim.partition("The sentence:\n")[0] for claim in claims}) == 1


def test_a_given_verify_replaces_the_judge_checks() -> None:
    def verify(sentence: str) -> bool | None:
        return None if "recommend" in sentence else "APAC" in sentence

    judge = by_prompt(decide)
    scores = score_answer(answer(None), judge, JudgeLog(), verify=verify)

    assert scores.factual_correctness == pytest.approx(3 / 5)  # three APAC facts of five
    assert len(judge.calls) == 3  # the ratings only


def test_no_database_no_verify_no_factual_score() -> None:
    scores = score_answer(answer(None), by_prompt(decide), JudgeLog())
    assert scores.factual_correctness is None and scores.checks == []


def test_aggregate_leaves_failed_ratings_out(database: Path) -> None:
    first = score_answer(answer(database), by_prompt(decide), JudgeLog())
    second = score_answer(answer(None), by_prompt(lambda prompt: GARBAGE), JudgeLog())

    summary = aggregate([first, second])

    assert summary["answers"] == 2 and summary["factual_correctness"] == pytest.approx(0.4)
    assert summary["answerability"] == 4.0 and summary["relevance"] is None
    assert summary["failed_calls"] == 2 + 3
