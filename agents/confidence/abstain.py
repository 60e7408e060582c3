"""Honest abstention: what an answer says when its confidence is under the threshold.

Instead of a confident made-up number, an abstaining answer says that it is unsure and why
(:func:`reasons`: the words nothing in the database matches, the period outside the data,
the samples that disagree, the empty result, ...), offers the nearest questions the
knowledge base knows how to answer (its labeled experiences shown as examples), and, when
the knowledge base gives a phrase of the question two or more meanings, asks which one was
meant (:func:`clarification`).
"""

from __future__ import annotations

from collections.abc import Sequence

from agents.confidence.report import Abstention, Clarification, ClarifyOption
from agents.confidence.signals import Ambiguity, AnswerSignals
from ukf import BaseUKF

LOW_LOGPROB = -0.5  # mean token log probability under which the model "was unsure"
SPLIT_VOTE = 0.6  # winning share under which samples "disagree"


def abstention(
    signals: AnswerSignals,
    *,
    confidence: float,
    threshold: float,
    database: str,
    examples: Sequence[BaseUKF] = (),
    question: str = "",
    suggestions: int = 3,
) -> Abstention:
    """What an answer with ``signals`` and ``confidence`` (under ``threshold``) says."""
    return Abstention(
        reasons=reasons(signals, confidence=confidence, threshold=threshold, database=database),
        suggestions=nearest_questions(examples, question, suggestions),
        clarification=clarification(signals.ambiguities),
    )


def reasons(
    signals: AnswerSignals, *, confidence: float, threshold: float, database: str
) -> list[str]:
    """Why the answer is unsure, most specific first (never empty)."""
    f = signals.features
    said: list[str] = []
    if signals.period and signals.data_span:
        said.append(f"the data covers {signals.data_span}; {signals.period} is outside it")
    words = signals.unmatched
    if words and f.get("span_coverage", 1.0) == 0.0 and len(words) >= 2:
        said.append(f"the question names nothing in the database {database}")
    elif words:
        quoted = ", ".join(f"'{w}'" for w in words[:4])
        said.append(f"nothing in the database {database} matches {quoted}")
    for ambiguity in signals.ambiguities[:2]:
        said.append(
            f"'{ambiguity.phrase}' has {len(ambiguity.meanings)} meanings in the knowledge base"
        )
    if f.get("no_result"):
        said.append("no candidate SQL ran successfully")
    elif f.get("empty_result"):
        said.append("the query found no rows")
    elif f.get("degenerate_result"):
        said.append("the query found only empty values (NULL, zero or blank)")
    if f.get("shape_mismatch"):
        said.append("the result's shape does not fit the question (one number vs. a list)")
    share, distinct = f.get("vote_share"), f.get("distinct_results", 0.0)
    if share is not None and share < SPLIT_VOTE and distinct >= 2:
        said.append(f"the samples disagree: {int(distinct)} different results")
    mean = f.get("logprob_mean")
    if mean is not None and mean < LOW_LOGPROB:
        said.append("the model was unsure of the SQL it wrote")
    if f.get("repairs", 0.0) >= 2:
        said.append(f"the SQL needed {int(f['repairs'])} repairs before it ran")
    if f.get("plain_fallback"):
        said.append("only a retry without the knowledge base's hints produced an answer")
    if not said:
        said.append(f"the calibrated confidence {confidence:.2f} is under {threshold:.2f}")
    return said


def nearest_questions(examples: Sequence[BaseUKF], question: str, limit: int) -> list[str]:
    """The questions of the labeled experiences nearest to ``question``: ones the knowledge
    base knows how to answer."""
    found: list[str] = []
    for entry in examples:
        res = entry.content_resources
        text = str(res.get("question") or entry.name).strip()
        trusted = bool(res.get("labeled") or res.get("verified"))
        if trusted and text and text.lower() != question.strip().lower() and text not in found:
            found.append(text)
    return found[:limit]


def clarification(ambiguities: Sequence[Ambiguity]) -> Clarification | None:
    """Which meaning of the first ambiguous phrase was meant, or None."""
    if not ambiguities:
        return None
    first = ambiguities[0]
    options = [
        ClarifyOption(id=m.id, type=m.type, name=m.name, meaning=m.description)
        for m in first.meanings
    ]
    listed = [o.meaning for o in options]
    choices = ", ".join(f"'{m}'" for m in listed[:-1]) + f" or '{listed[-1]}'"
    return Clarification(
        phrase=first.phrase,
        question=f"What do you mean by '{first.phrase}': {choices}?",
        options=options,
    )
