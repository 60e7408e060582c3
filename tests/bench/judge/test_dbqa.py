"""Long-form DBQA scoring with a scripted judge: reviewer, meta-reviewer, match score."""

from __future__ import annotations

from bench.judge.answers import AnalysisAnswer, Evidence
from bench.judge.core import JudgeLog
from bench.judge.dbqa import aggregate, perfect_rate, score_answer, stage_text
from tests.bench.judge.judges import GARBAGE, by_prompt

ANSWER = AnalysisAnswer(
    id="a1",
    question="Why did Aurora's margin fall in Q3?",
    type="diagnostic",
    short_answer="EMEA discounts drove the fall.",
    plan=("Margin by quarter", "Margin change by region"),
    evidence=(Evidence("SELECT q, margin FROM m", None, "q1"), Evidence("SELECT bad", "boom")),
    reference="The fall came from EMEA discounting on the Aurora X.",
)


def scripted(replies: dict[tuple[str, str], object]):
    """Replies keyed by (reviewer | meta | match, stage)."""

    def decide(prompt: str) -> object:
        if prompt.startswith("Question:") and "Reference answer:" in prompt:
            return replies[("match", "")]
        role = "meta" if "You are the meta-reviewer" in prompt else "review"
        stage = prompt.split("Stage: ")[1].split("\n")[0]
        return replies[(role, stage)]

    return by_prompt(decide)


def test_meta_reviewer_verdict_is_final_and_garbage_counts_imperfect() -> None:
    judge = scripted(
        {
            ("review", "plan"): {"verdict": "imperfect", "issues": "no period"},
            ("meta", "plan"): {"verdict": "perfect", "issues": ""},
            ("review", "sql"): {"verdict": "perfect"},
            ("meta", "sql"): {"verdict": "perfect"},
            ("review", "synthesis"): GARBAGE,
            ("match", ""): {"score": 4, "reason": "close"},
        }
    )
    judge_log = JudgeLog()

    scores = score_answer(ANSWER, judge, judge_log)

    assert scores.reviewer == {"plan": "imperfect", "sql": "perfect", "synthesis": None}
    assert scores.verdicts == {"plan": "perfect", "sql": "perfect", "synthesis": None}
    assert scores.match == 4 and scores.failed_calls == 1
    assert [r["step"] for r in judge_log.records] == [
        "review:plan",
        "meta:plan",
        "review:sql",
        "meta:sql",
        "review:synthesis",
        "match",
    ]
    meta_prompt = judge.calls[1][0][-1]["content"]
    assert "The reviewer said: imperfect (no period)" in meta_prompt
    assert "2. Margin change by region" in meta_prompt
    assert "-> error: boom" in stage_text(ANSWER, "sql")

    other = AnalysisAnswer(id="a2", question="Sales next quarter?", type="predictive")
    second = score_answer(
        other,
        scripted(
            {
                ("review", "plan"): {"verdict": "imperfect"},
                ("meta", "plan"): {"verdict": "imperfect", "issues": "no plan"},
                ("review", "sql"): {"verdict": "perfect"},
                ("meta", "sql"): {"verdict": "maybe"},
                ("review", "synthesis"): {"verdict": "perfect"},
                ("meta", "synthesis"): {"verdict": "perfect"},
            }
        ),
        JudgeLog(),
    )
    assert second.verdicts == {"plan": "imperfect", "sql": None, "synthesis": "perfect"}
    assert second.match is None and second.failed_calls == 1

    summary = aggregate([scores, second])
    assert summary["plan_perfect"] == 0.5 and summary["sql_perfect"] == 0.5
    assert summary["synthesis_perfect"] == 0.5 and summary["all_perfect"] == 0.0
    assert summary["match"] == 4.0 and summary["failed_calls"] == 2
    assert summary["by_type"]["diagnostic"]["plan_perfect"] == 1.0


def test_perfect_rate() -> None:
    assert perfect_rate(["perfect", "imperfect", None, "perfect"]) == 0.5
    assert perfect_rate([]) is None
