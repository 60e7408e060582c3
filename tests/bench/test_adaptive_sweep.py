"""The adaptive-target sweep: what each target would have done, from a run that drew every
question's budget (known traces → known EX, latency and escalation per target)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.adaptive_sweep import TraceMissingError, main, sweep, traced
from bench.run import QuestionResult


def result(
    qid: str,
    *,
    greedy: tuple[float, bool, float] | None,
    final: tuple[bool, float],
    checks: list[dict[str, float]] | None = None,
) -> QuestionResult:
    """A question of the budget-spending run: ``greedy`` (confidence, right, decided at s)
    and the ``final`` answer (right, seconds); ``greedy`` None: a fixed vote's question."""
    right, seconds = final
    meta = {}
    alternatives = {}
    if greedy is not None:
        confidence, greedy_right, at_s = greedy
        meta["adaptive"] = checks or [
            {"samples": 1, "confidence": confidence, "at_s": at_s},
            {"samples": 5, "confidence": 0.9, "at_s": seconds - 0.5},
        ]
        alternatives["greedy"] = {"ex": 1.0 if greedy_right else 0.0}
    return QuestionResult(
        id=qid,
        position=0,
        question="q",
        database="db",
        scores={"ex": 1.0 if right else 0.0},
        alternative_scores=alternatives,
        latency_s=seconds,
        system_metadata=meta,
    )


ADAPTIVE = [
    result("a", greedy=(0.9, True, 2.0), final=(True, 10.0)),  # sure and right
    result("b", greedy=(0.6, False, 3.0), final=(True, 12.0)),  # the vote fixes it
    result("c", greedy=(0.2, False, 4.0), final=(False, 14.0)),  # wrong either way
    result("d", greedy=(0.4, True, 2.0), final=(True, 10.0)),
]
FIXED = [
    result("a", greedy=None, final=(True, 8.0)),
    result("b", greedy=None, final=(True, 8.0)),
    result("c", greedy=None, final=(False, 8.0)),
    result("d", greedy=None, final=(True, 8.0)),
    result("x", greedy=None, final=(True, 8.0)),  # not in the adaptive run: left out
]


def test_each_target_stops_the_questions_whose_greedy_confidence_reaches_it():
    lines, vote_ex, vote_s, count = sweep(ADAPTIVE, FIXED, (0.0, 0.5, 0.7, 1.0))
    assert (vote_ex, vote_s, count) == (0.75, 8.0, 4)
    by_target = {line.target: line for line in lines}
    # 0.0: every greedy answer (a, d right); latency: greedy decision + the 0.5 s tail
    assert by_target[0.0].ex == 0.5 and by_target[0.0].escalated_share == 0.0
    assert by_target[0.0].mean_s == pytest.approx((2.5 + 3.5 + 4.5 + 2.5) / 4)
    # 0.5: a and b stop (b wrong); c and d draw on
    assert by_target[0.5].ex == 0.5 and by_target[0.5].escalated_share == 0.5
    # 0.7: only a stops: b fixed by the vote
    assert by_target[0.7].ex == 0.75 and by_target[0.7].mean_s == pytest.approx(
        (2.5 + 12 + 14 + 10) / 4
    )
    assert by_target[1.0].escalated_share == 1.0 and by_target[1.0].ex == 0.75
    meets = {line.target: line.meets for line in lines}
    assert meets == {0.0: False, 0.5: False, 0.7: False, 1.0: False}  # none at half the time
    generous = sweep(ADAPTIVE, FIXED, (0.7,), latency_share=1.25)[0]
    assert generous[0].meets  # EX of the vote at 120 % of its time


def test_a_question_that_stopped_at_its_greedy_answer_in_the_run_stops_for_every_target():
    once = result(
        "a",
        greedy=(0.95, True, 2.0),
        final=(True, 2.5),
        checks=[{"samples": 1, "confidence": 0.95, "at_s": 2.0}],
    )
    question = traced(once)
    assert not question.escalated
    assert question.at(1.0) == (True, 2.5, False) and question.at(0.0) == (True, 2.5, False)


def test_a_run_without_traces_is_refused_naming_the_question(tmp_path: Path, capsys):
    with pytest.raises(TraceMissingError, match="question a: no adaptive trace"):
        sweep(FIXED, FIXED)
    for name, rows in (("adaptive", ADAPTIVE), ("fixed", FIXED)):
        (tmp_path / name).mkdir()
        lines = "".join(r.model_dump_json() + "\n" for r in rows)
        (tmp_path / name / "results.jsonl").write_text(lines)
    out = tmp_path / "sweep.md"
    args = ["--adaptive", str(tmp_path / "adaptive"), "--fixed", str(tmp_path / "fixed")]
    assert main([*args, "--targets", "0.5,0.7", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "fixed vote on 4 questions: EX 0.750" in printed and "| 0.70 | 0.750 |" in printed
    assert out.read_text().strip() == printed.strip()
    assert main(["--adaptive", str(tmp_path / "fixed"), "--fixed", str(tmp_path / "fixed")]) == 2
    assert "no adaptive trace" in capsys.readouterr().err
    assert json.loads(ADAPTIVE[0].model_dump_json())["system_metadata"]["adaptive"]


def test_an_adaptive_system_at_target_one_draws_the_budget_and_keeps_the_trace():
    from bench.datasets import load_dataset
    from bench.systems import make_system
    from indices.embeddings import HashingEmbedder
    from tests.agents.scripted import ScriptedLLM, sql_reply

    try:
        spider = load_dataset("spider_dev")
    except FileNotFoundError:
        pytest.skip("Spider dev is not on this machine")
    example = next(e for e in spider if e.question == "How many singers do we have?")
    llm = ScriptedLLM([sql_reply("SELECT count(*) FROM singer")])
    system = make_system(
        "almanac-adaptive", llm=llm, embedder=HashingEmbedder(), adaptive_target=1.0
    )
    system.prepare({example.database: example.database_url})
    prediction = system.predict(example, "sqlite")
    checks = prediction.metadata["adaptive"]
    # never sure enough: the whole budget (one sample a call with a scripted model)
    assert [c["samples"] for c in checks] == [1, 2, 3, 4, 5]
    assert [c["at_s"] for c in checks] == sorted(c["at_s"] for c in checks)
    assert checks[-1]["at_s"] <= prediction.metadata["seconds"]
    assert "greedy" in prediction.alternatives and prediction.metadata["samples"] == 5
    plain = make_system("almanac-adaptive", llm=llm, embedder=HashingEmbedder())
    plain.prepare({example.database: example.database_url})
    options = plain.pipeline_on(example.database).confidence.options
    assert (options.target, options.escalation_target) == (0.1, 0.5)  # the server's defaults
    escalating = make_system(
        "almanac-adaptive", llm=llm, embedder=HashingEmbedder(), escalation_target=0.7
    )
    escalating.prepare({example.database: example.database_url})
    options = escalating.pipeline_on(example.database).confidence.options
    assert (options.target, options.escalation_target) == (0.1, 0.7)


def test_a_greedy_draw_that_gave_no_candidate_escalates_for_every_target():
    late = result(
        "a",
        greedy=(0.8, False, 2.0),
        final=(True, 9.0),
        checks=[{"samples": 5, "confidence": 0.8, "at_s": 8.5}],
    )
    question = traced(late)
    assert question.escalated and question.at(0.0) == (True, 9.0, True)


def test_a_question_past_the_timeout_counts_as_it_ran_under_every_target():
    late = result("t", greedy=None, final=(False, 128.0))
    late.timed_out_after_s = 120.0
    question = traced(late)
    assert question.at(0.0) == question.at(1.0) == (False, 128.0, True)
    lines, vote_ex, _, count = sweep([*ADAPTIVE, late], [*FIXED, late], [0.0])
    assert count == 5 and vote_ex == 0.6 and lines[0].ex == 0.4  # a and d stop right at 0


def test_a_run_under_target_one_speaks_only_for_targets_up_to_its_lowest_stop(
    tmp_path: Path, capsys
):
    stopped = result(
        "a",
        greedy=(0.3, True, 2.0),
        final=(True, 2.5),
        checks=[{"samples": 1, "confidence": 0.3, "at_s": 2.0}],
    )
    run_at_low_target = [stopped, *ADAPTIVE[1:]]  # b (0.6) and d (0.4) drew on: not estimable
    lines, *_ = sweep(run_at_low_target, FIXED, (0.0, 0.2, 0.3, 0.5, 1.0))
    assert [line.target for line in lines] == [0.0, 0.2, 0.3]
    assert lines[-1].escalated_share == 0.25  # at 0.3 only c (0.2) draws on
    for name, rows in (("adaptive", run_at_low_target), ("fixed", FIXED)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text(
            "".join(r.model_dump_json() + "\n" for r in rows)
        )
    args = ["--adaptive", str(tmp_path / "adaptive"), "--fixed", str(tmp_path / "fixed")]
    assert main([*args, "--targets", "0.1,0.5,0.9"]) == 0
    printed = capsys.readouterr().out
    assert "| 0.10 |" in printed and "| 0.50 |" not in printed
    assert "Targets 0.50, 0.90 left out" in printed


def test_each_target_carries_the_auroc_and_ece_of_the_confidence_its_answers_would_have():
    # a, d stop sure at 0.5 (0.9, 0.4 -> d escalates), b, c draw on and carry the vote's 0.9
    runs = [
        result("a", greedy=(0.9, True, 2.0), final=(True, 10.0)),
        result("b", greedy=(0.6, False, 3.0), final=(True, 12.0)),
        result("c", greedy=(0.2, False, 4.0), final=(False, 14.0)),
    ]
    for run, final_confidence in zip(runs, (0.95, 0.8, 0.1), strict=True):
        run.system_metadata["confidence"] = final_confidence
    questions = [traced(r) for r in runs]
    # at 0.0 the greedy confidences: 0.9 right, 0.6 wrong, 0.2 wrong
    assert [q.confidence_at(0.0) for q in questions] == [0.9, 0.6, 0.2]
    # at 0.7 b and c draw on: b's vote (right, 0.8), c's (wrong, 0.1)
    assert [q.confidence_at(0.7) for q in questions] == [0.9, 0.8, 0.1]
    lines, vote_ex, _, count = sweep(runs, None, (0.0, 0.7))
    assert count == 3 and vote_ex != vote_ex  # no vote: NaN
    low, high = lines
    assert low.auroc == 1.0 and high.auroc == 1.0
    assert low.ece == pytest.approx((0.1 + 0.6 + 0.2) / 3)
    assert high.ece == pytest.approx((0.1 + 0.2 + 0.1) / 3)
    assert not low.meets and not high.meets


def test_without_a_fixed_vote_the_sweep_prints_no_vote_columns(tmp_path: Path, capsys):
    (tmp_path / "adaptive").mkdir()
    (tmp_path / "adaptive" / "results.jsonl").write_text(
        "".join(r.model_dump_json() + "\n" for r in ADAPTIVE)
    )
    assert main(["--adaptive", str(tmp_path / "adaptive"), "--targets", "0.5"]) == 0
    printed = capsys.readouterr().out
    assert "4 questions, no fixed vote" in printed
    assert "| target | EX | mean latency | escalated | AUROC | ECE |" in printed
    assert "| 0.50 | 0.500 |" in printed
