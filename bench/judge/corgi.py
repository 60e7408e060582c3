"""The CORGI protocol: a discriminator picks the dimensions that matter, agents score each.

Step 1 (discriminator): given the question and its type, the judge picks which of
:data:`DIMENSIONS` apply. A failed or empty pick falls back to all six (recorded as failed).
Step 2 (scoring agents): one call per chosen dimension, scored 0, 3 or 5 against the anchors
written in ``corgi_score.j2``; a failed call scores 0. The answer's score is the mean over the
chosen dimensions (:func:`dimension_mean`).

Beside it, the SQL success-execution rate: the share of the answer's evidence queries that ran
without error (:func:`sql_success_rate`; None for an answer with no evidence).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.judge.answers import AnalysisAnswer, Evidence
from bench.judge.core import REASON, Judge, JudgeLog, JudgeParseError, ask, mean, scale
from bench.judge.core import field as reply_field

PROTOCOL = "corgi"
DIMENSIONS: dict[str, str] = {
    "structure": "the answer is organised: the conclusion first, then supporting points, each "
    "one idea, easy to follow",
    "data_sense": "the numbers are used correctly: right magnitudes, units, comparisons and "
    "periods, consistent with the evidence, no unsupported figures",
    "insightfulness": "the answer goes beyond restating data: it explains drivers, patterns or "
    "implications a business reader would not see at once",
    "operational_implementability": "the recommendations or conclusions can be acted on: "
    "concrete actions, owners or levers, and their expected effect",
    "purpose_alignment": "the answer addresses the question actually asked, for its type "
    "(why, what next, what to do), without drifting",
    "compliance": "the answer respects the data's limits: it states caveats and uncertainty, "
    "does not overclaim causation, and invents nothing",
}
ANCHORS = (0, 3, 5)
PICK_SCHEMA = {
    "type": "object",
    "properties": {"dimensions": {"type": "array", "items": {"enum": list(DIMENSIONS)}}},
    "required": ["dimensions"],
}
SCORE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"enum": list(ANCHORS)}, "reason": REASON},
    "required": ["score"],
}


def sql_success_rate(evidence: tuple[Evidence, ...] | list[Evidence]) -> float | None:
    """The share of evidence queries that ran without error; None when there are none."""
    return mean([0.0 if item.error else 1.0 for item in evidence])


def dimension_mean(scores: dict[str, int | None]) -> float | None:
    """The mean 0–5 score over the chosen dimensions, a failed one (None) counting 0."""
    return mean([float(value or 0) for value in scores.values()])


def parse_dimensions(reply: Any) -> list[str]:
    """The known dimension names in the reply, in :data:`DIMENSIONS` order; at least one."""
    names = reply_field(reply, "dimensions")
    if not isinstance(names, list):
        raise JudgeParseError(f"'dimensions' is not a list: {names!r}")
    wanted = {str(name).strip().lower().replace(" ", "_") for name in names}
    chosen = [name for name in DIMENSIONS if name in wanted]
    if not chosen:
        raise JudgeParseError(f"no known dimension among {names!r}")
    return chosen


@dataclass
class CorgiScores:
    """One answer's CORGI scores: the dimension scores (None: failed), their mean, and the
    SQL success-execution rate."""

    id: str
    type: str
    dimensions: dict[str, int | None]
    score: float | None
    sql_success: float | None
    discriminator_failed: bool = False
    failed_calls: int = 0
    reasons: dict[str, str] = field(default_factory=dict)


def score_answer(answer: AnalysisAnswer, judge: Judge, judge_log: JudgeLog) -> CorgiScores:
    """Pick the dimensions for ``answer``'s question, then score each."""
    context: dict[str, Any] = {
        "question": answer.question,
        "question_type": answer.type or "unknown",
        "answer": answer.text,
        "queries": [e.sql for e in answer.evidence if e.sql],
    }
    pick = ask(
        judge,
        judge_log,
        protocol=PROTOCOL,
        item=answer.id,
        step="discriminator",
        template="corgi_discriminator.j2",
        parse=parse_dimensions,
        schema=PICK_SCHEMA,
        dimensions=DIMENSIONS,
        **context,
    )
    chosen = pick.value if pick.ok else list(DIMENSIONS)
    scores: dict[str, int | None] = {}
    reasons: dict[str, str] = {}
    failed = int(not pick.ok)
    for name in chosen:
        verdict = ask(
            judge,
            judge_log,
            protocol=PROTOCOL,
            item=answer.id,
            step=f"score:{name}",
            template="corgi_score.j2",
            parse=_anchored,
            schema=SCORE_SCHEMA,
            dimension=name.replace("_", " "),
            definition=DIMENSIONS[name],
            **context,
        )
        failed += not verdict.ok
        scores[name] = verdict.value[0] if verdict.ok else None
        if verdict.ok:
            reasons[name] = verdict.value[1]
    return CorgiScores(
        id=answer.id,
        type=answer.type,
        dimensions=scores,
        score=dimension_mean(scores),
        sql_success=sql_success_rate(answer.evidence),
        discriminator_failed=not pick.ok,
        failed_calls=failed,
        reasons=reasons,
    )


def _anchored(reply: Any) -> tuple[int, str]:
    reason = reply.get("reason", "") if isinstance(reply, dict) else ""
    return scale(reply, "score", ANCHORS), str(reason)


def aggregate(scores: list[CorgiScores]) -> dict[str, Any]:
    """Means over answers, overall and per question type; per-dimension means over the
    answers whose discriminator chose that dimension."""

    def summary(group: list[CorgiScores]) -> dict[str, Any]:
        return {
            "answers": len(group),
            "score": mean([s.score for s in group if s.score is not None]),
            "sql_success": mean([s.sql_success for s in group if s.sql_success is not None]),
            "dimensions": {
                name: mean([float(s.dimensions[name] or 0) for s in group if name in s.dimensions])
                for name in DIMENSIONS
            },
            "failed_calls": sum(s.failed_calls for s in group),
        }

    types = sorted({s.type for s in scores})
    return {
        **summary(scores),
        "by_type": {t: summary([s for s in scores if s.type == t]) for t in types},
    }
