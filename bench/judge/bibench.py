"""The BI-Bench protocol: factual correctness checked against the data, and three 1–5 scores.

Factual correctness: the answer is split into sentences (:func:`sentences`); for each, either a
caller's ``verify(sentence) -> bool | None`` decides (None: not a factual claim), or the judge
(1) says whether it is a factual claim and, if so, writes a checkable question and one SQL
query over the answer's database, (2) the query runs read-only (:func:`run_readonly`), and
(3) the judge says whether the rows support the sentence. The score is the share of factual
sentences found true (:func:`factual_correctness`); a factual sentence whose check fails (a
garbage reply, an SQL error) counts false. Answerability, relevance and presentation are
scored 1–5 by the judge, one call each; a failed one is None and left out of the means
(``failed_calls`` counts it).
"""

from __future__ import annotations

import re
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from bench.judge.answers import AnalysisAnswer
from bench.judge.core import REASON, Judge, JudgeLog, ask, boolean, mean, scale
from bench.judge.core import field as reply_field

PROTOCOL = "bibench"
CRITERIA: dict[str, str] = {
    "answerability": "the answer actually answers the question asked (or says clearly and "
    "correctly why the data cannot answer it), rather than evading or answering another one",
    "relevance": "everything in the answer bears on the question; no padding, no unrelated facts",
    "presentation": "the answer is clear and well formatted: the conclusion first, numbers "
    "with units, readable by a business user",
}
Verify = Callable[[str], "bool | None"]
CLAIM_SCHEMA = {
    "type": "object",
    "properties": {
        "factual": {"type": "boolean"},
        "question": REASON,
        "sql": {"type": "string", "maxLength": 800},
    },
    "required": ["factual"],
}
SUPPORT_SCHEMA = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}, "reason": REASON},
    "required": ["supported"],
}
RATING_SCHEMA = {
    "type": "object",
    "properties": {"score": {"enum": [1, 2, 3, 4, 5]}, "reason": REASON},
    "required": ["score"],
}
_BREAK = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: split at line breaks and at ., ! or ? followed by a capital
    or a digit (so "3.5" and "e.g. sales" stay whole), list bullets removed."""
    lines = (_BULLET.sub("", line) for line in text.splitlines())
    parts = (part.strip() for line in lines for part in _BREAK.split(line))
    return [part for part in parts if re.search(r"\w", part)]


def factual_correctness(checks: list[bool | None]) -> float | None:
    """The share of factual sentences found true (None entries: not factual, left out);
    None when no sentence is factual."""
    return mean([1.0 if check else 0.0 for check in checks if check is not None])


def run_readonly(
    database: Path, sql: str, *, max_rows: int = 50, timeout_s: float = 10.0
) -> tuple[list[tuple[Any, ...]], str | None]:
    """Run ``sql`` on ``database`` opened read-only (SQLite URI ``mode=ro``); the first
    ``max_rows`` rows and None, or no rows and the error."""
    uri = f"file:{quote(str(Path(database).resolve()))}?mode=ro"
    deadline = time.monotonic() + timeout_s
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=timeout_s)) as connection:
            connection.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
            return connection.execute(sql).fetchmany(max_rows), None
    except sqlite3.Error as exc:
        return [], f"{type(exc).__name__}: {exc}"


def schema_of(database: Path) -> str:
    """The CREATE statements of ``database``'s tables and views."""
    rows, error = run_readonly(
        database,
        "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') AND sql IS NOT NULL",
    )
    return error or "\n".join(row[0] + ";" for row in rows)


@dataclass
class SentenceCheck:
    """How one sentence was checked: ``verdict`` None when it is not a factual claim."""

    sentence: str
    verdict: bool | None
    question: str = ""
    sql: str = ""
    error: str | None = None


@dataclass
class BiBenchScores:
    """One answer's BI-Bench scores."""

    id: str
    type: str
    factual_correctness: float | None
    ratings: dict[str, int | None]
    checks: list[SentenceCheck] = field(default_factory=list)
    failed_calls: int = 0


def _claim(reply: Any) -> tuple[bool, str, str]:
    factual = boolean(reply, "factual")
    if not factual:
        return False, "", ""
    sql = reply_field(reply, "sql")
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError("a factual claim without SQL")
    return True, str(reply.get("question", "")), sql.strip().rstrip(";")


def _rating(reply: Any) -> int:
    return scale(reply, "score", (1, 2, 3, 4, 5))


def check_sentence(
    answer: AnalysisAnswer,
    index: int,
    sentence: str,
    judge: Judge,
    judge_log: JudgeLog,
    schema: str,
) -> tuple[SentenceCheck, int]:
    """One sentence checked against ``answer.database`` by the judge; and its failed calls."""
    item = f"{answer.id}/sentence-{index}"
    common: dict[str, Any] = {"protocol": PROTOCOL, "item": item}
    claim = ask(
        judge, judge_log, **common, step="claim", template="bibench_claim.j2", parse=_claim,
        schema=CLAIM_SCHEMA, max_tokens=400, question=answer.question, sentence=sentence,
        schema_sql=schema,
    )  # fmt: skip
    if not claim.ok:
        return SentenceCheck(sentence, False, error=claim.error), 1
    factual, question, sql = claim.value
    if not factual:
        return SentenceCheck(sentence, None), 0
    assert answer.database is not None
    rows, error = run_readonly(answer.database, sql)
    if error is not None:
        return SentenceCheck(sentence, False, question, sql, error=error), 0
    support = ask(
        judge, judge_log, **common, step="support", template="bibench_support.j2",
        parse=lambda reply: boolean(reply, "supported"), schema=SUPPORT_SCHEMA,
        sentence=sentence, check_question=question, sql=sql, rows=rows,
    )  # fmt: skip
    return (
        SentenceCheck(sentence, bool(support.value), question, sql, error=support.error),
        int(not support.ok),
    )


def score_answer(
    answer: AnalysisAnswer, judge: Judge, judge_log: JudgeLog, *, verify: Verify | None = None
) -> BiBenchScores:
    """Score ``answer``: its sentences checked (by ``verify`` when given, else by the judge
    against ``answer.database``; neither: no factual score), then the three ratings."""
    failed = 0
    checks: list[SentenceCheck] = []
    parts = sentences(answer.text)
    if verify is not None:
        checks = [SentenceCheck(s, verify(s)) for s in parts]
    elif answer.database is not None:
        schema = schema_of(answer.database)
        for index, sentence in enumerate(parts):
            check, failures = check_sentence(answer, index, sentence, judge, judge_log, schema)
            checks.append(check)
            failed += failures
    ratings: dict[str, int | None] = {}
    for name, definition in CRITERIA.items():
        verdict = ask(
            judge, judge_log, protocol=PROTOCOL, item=answer.id, step=name,
            template="bibench_rating.j2", parse=_rating, schema=RATING_SCHEMA,
            question=answer.question, answer=answer.text, criterion=name, definition=definition,
        )  # fmt: skip
        failed += not verdict.ok
        ratings[name] = verdict.value
    return BiBenchScores(
        id=answer.id,
        type=answer.type,
        factual_correctness=factual_correctness([c.verdict for c in checks]) if checks else None,
        ratings=ratings,
        checks=checks,
        failed_calls=failed,
    )


def aggregate(scores: list[BiBenchScores]) -> dict[str, Any]:
    """Means over answers, overall and per question type (None values left out)."""

    def summary(group: list[BiBenchScores]) -> dict[str, Any]:
        return {
            "answers": len(group),
            "factual_correctness": mean(
                [s.factual_correctness for s in group if s.factual_correctness is not None]
            ),
            **{
                name: mean([float(v) for s in group if (v := s.ratings.get(name)) is not None])
                for name in CRITERIA
            },
            "failed_calls": sum(s.failed_calls for s in group),
        }

    types = sorted({s.type for s in scores})
    return {
        **summary(scores),
        "by_type": {t: summary([s for s in scores if s.type == t]) for t in types},
    }
