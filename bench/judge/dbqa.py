"""The long-form database-QA protocol: reviewer and meta-reviewer verdicts, and a match score.

Each of three stages of an answer, the plan (its sub-questions), the SQL (its evidence
queries and their errors) and the synthesis (the written answer), is reviewed by the judge as
*reviewer* (perfect or imperfect, with the issues found); a *meta-reviewer* call then reads the
reviewer's verdict and keeps or overturns it, and its verdict is final. A stage whose review
fails (garbage reply, judge error) has no verdict (None) and counts as imperfect in
:func:`perfect_rate`. When the answer has a reference answer, the judge rates how well the
answer matches it, 1–5 (None when it fails or there is no reference; left out of the means).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.judge.answers import AnalysisAnswer
from bench.judge.core import REASON, Judge, JudgeLog, JudgeParseError, ask, mean, scale
from bench.judge.core import field as reply_field

PROTOCOL = "dbqa"
STAGES = ("plan", "sql", "synthesis")
VERDICTS = ("perfect", "imperfect")
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"enum": list(VERDICTS)}, "issues": REASON},
    "required": ["verdict"],
}
MATCH_SCHEMA = {
    "type": "object",
    "properties": {"score": {"enum": [1, 2, 3, 4, 5]}, "reason": REASON},
    "required": ["score"],
}


def parse_verdict(reply: Any) -> tuple[str, str]:
    """("perfect" | "imperfect", the issues named) from a reply."""
    verdict = str(reply_field(reply, "verdict")).strip().lower()
    if verdict not in VERDICTS:
        raise JudgeParseError(f"verdict {verdict!r} is not one of {list(VERDICTS)}")
    return verdict, str(reply.get("issues") or reply.get("reason") or "")


def perfect_rate(verdicts: list[str | None]) -> float | None:
    """The share of "perfect" verdicts, a failed one (None) counting imperfect."""
    return mean([1.0 if verdict == "perfect" else 0.0 for verdict in verdicts])


@dataclass
class DbqaScores:
    """One answer's verdicts per stage (final = the meta-reviewer's), and its match score."""

    id: str
    type: str
    verdicts: dict[str, str | None]
    reviewer: dict[str, str | None]
    match: int | None
    issues: dict[str, str] = field(default_factory=dict)
    failed_calls: int = 0


def stage_text(answer: AnalysisAnswer, stage: str) -> str:
    """What the reviewer reads for ``stage``."""
    if stage == "plan":
        return "\n".join(f"{i}. {step}" for i, step in enumerate(answer.plan, 1)) or "(no plan)"
    if stage == "sql":
        lines = [
            f"[{e.id or i}] {e.sql}" + (f"\n    -> error: {e.error}" if e.error else "\n    -> ran")
            for i, e in enumerate(answer.evidence, 1)
        ]
        return "\n".join(lines) or "(no queries)"
    return answer.text or "(no answer)"


def score_answer(answer: AnalysisAnswer, judge: Judge, judge_log: JudgeLog) -> DbqaScores:
    """Review, meta-review and (with a reference) match-score ``answer``."""
    verdicts: dict[str, str | None] = {}
    reviewer: dict[str, str | None] = {}
    issues: dict[str, str] = {}
    failed = 0
    for stage in STAGES:
        context: dict[str, Any] = {
            "question": answer.question,
            "stage": stage,
            "content": stage_text(answer, stage),
        }
        review = ask(
            judge, judge_log, protocol=PROTOCOL, item=answer.id, step=f"review:{stage}",
            template="dbqa_review.j2", parse=parse_verdict, schema=VERDICT_SCHEMA, **context,
        )  # fmt: skip
        failed += not review.ok
        reviewer[stage] = review.value[0] if review.ok else None
        if not review.ok:
            verdicts[stage] = None
            continue
        meta = ask(
            judge, judge_log, protocol=PROTOCOL, item=answer.id, step=f"meta:{stage}",
            template="dbqa_meta.j2", parse=parse_verdict, schema=VERDICT_SCHEMA,
            review_verdict=review.value[0], review_issues=review.value[1], **context,
        )  # fmt: skip
        failed += not meta.ok
        verdicts[stage] = meta.value[0] if meta.ok else None
        if meta.ok and meta.value[1]:
            issues[stage] = meta.value[1]
    match = None
    if answer.reference:
        verdict = ask(
            judge, judge_log, protocol=PROTOCOL, item=answer.id, step="match",
            template="dbqa_match.j2", parse=lambda reply: scale(reply, "score", (1, 2, 3, 4, 5)),
            schema=MATCH_SCHEMA, question=answer.question, answer=answer.text,
            reference=answer.reference,
        )  # fmt: skip
        failed += not verdict.ok
        match = verdict.value
    return DbqaScores(
        id=answer.id,
        type=answer.type,
        verdicts=verdicts,
        reviewer=reviewer,
        match=match,
        issues=issues,
        failed_calls=failed,
    )


def aggregate(scores: list[DbqaScores]) -> dict[str, Any]:
    """Perfect rates per stage (and all three perfect), the mean match score, per type too."""

    def summary(group: list[DbqaScores]) -> dict[str, Any]:
        return {
            "answers": len(group),
            **{
                f"{stage}_perfect": perfect_rate([s.verdicts[stage] for s in group])
                for stage in STAGES
            },
            "all_perfect": perfect_rate(
                [
                    "perfect" if all(s.verdicts[x] == "perfect" for x in STAGES) else None
                    for s in group
                ]
            ),
            "match": mean([float(s.match) for s in group if s.match is not None]),
            "failed_calls": sum(s.failed_calls for s in group),
        }

    types = sorted({s.type for s in scores})
    return {
        **summary(scores),
        "by_type": {t: summary([s for s in scores if s.type == t]) for t in types},
    }
