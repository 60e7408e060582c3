"""What each adaptive target would have done, from one run that drew every question's budget.

Adaptive sampling (issue 25) answers with the greedy answer alone when its confidence reaches
the target, and draws the rest of the budget otherwise. Whether some target keeps the EX of a
fixed vote at half its latency is a question about the whole curve, and each point of it
would be a run of its own. Instead, two runs on the same questions:

    python -m bench run --dataset spider_dev --stratify 60 --system almanac-adaptive \\
        --sequences 5 --adaptive-target 1.0 --out bench/out/spider60-always
    python -m bench run --dataset spider_dev --stratify 60 --system almanac-tts \\
        --sequences 5 --out bench/out/spider60-vote5
    python -m bench.adaptive_sweep --adaptive bench/out/spider60-always \\
        --fixed bench/out/spider60-vote5

With target 1.0 every question draws its greedy answer, then the rest of its budget, and
its answer keeps the trace of the stop rule (:mod:`agents.adaptive_trace`: the greedy
answer's confidence and when the rule saw it) and its greedy answer (scored as the
``greedy`` alternative). For a target t, a question whose greedy confidence is at least t
stops at its greedy answer: it is right when the greedy answer is, and its latency is the
time its rule decided plus what followed the last decision in the run (assessing and
logging the answer); every other question is as it ran. A question that stopped at its
greedy answer in the run itself (confidence at or above the run's target) stops there
for every target it can speak for: a run at a target under 1.0 knows nothing of what more
samples would have given those questions, so targets above the lowest greedy confidence it
stopped at are left out (named under the table).

Each target's line: EX, mean latency, its share of the fixed vote's mean latency, the
share of questions that drew more than the greedy answer (a question that ran past the
run's timeout lost its answer and its trace: it counts as it ran, wrong and slow, under
every target, and as escalated, with confidence 0), and the AUROC and ECE of the
confidence each answer would have carried (the greedy answer's where it stops, else the
final one's): how well the answers are ranked depends on the target too, since answers
the vote made right keep a split vote's low confidence. Without ``--fixed`` the vote's
columns are left out. ``meets`` marks the targets
within ``--ex-margin`` (default 0.01) of the vote's EX at ``--latency-share`` (default
0.5) of its latency or less. The latency of a question that would have stopped is an
estimate from the run (its greedy answer was not timed alone), so the best target found
here is then checked by a run of its own (``--adaptive-target T`` without ``1.0``).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agents.confidence.metrics import auroc, expected_calibration_error
from bench.run import QuestionResult, load_results

DEFAULT_TARGETS = tuple(round(0.05 * i, 2) for i in range(21))


@dataclass(frozen=True)
class Traced:
    """One question of the budget-spending run: its greedy answer and its final one."""

    id: str
    greedy_confidence: float
    greedy_correct: bool
    greedy_seconds: float
    final_correct: bool
    final_seconds: float
    escalated: bool  # drew more than the greedy answer in the run
    final_confidence: float

    def confidence_at(self, target: float) -> float:
        """The confidence the answer under ``target`` would have carried: its greedy
        answer's when it stops there, else the final answer's (0 for a question that lost
        its answer to the timeout: nothing was said)."""
        if self.escalated and self.greedy_confidence >= target:
            return self.greedy_confidence
        return self.final_confidence

    def at(self, target: float) -> tuple[bool, float, bool]:
        """(correct, seconds, escalated) under ``target``."""
        if not self.escalated or self.greedy_confidence >= target:
            return self.greedy_correct, self.greedy_seconds, False
        return self.final_correct, self.final_seconds, True


@dataclass(frozen=True)
class TargetLine:
    target: float
    ex: float
    mean_s: float
    latency_share: float
    escalated_share: float
    meets: bool
    auroc: float | None = None  # of the confidence each answer would have carried
    ece: float | None = None


class TraceMissingError(ValueError):
    """A result of the adaptive run has no stop-rule trace (not an adaptive run, or run
    before traces were recorded)."""


def traced(result: QuestionResult) -> Traced:
    """The question as :class:`Traced`; :class:`TraceMissingError` without a trace."""
    checks = result.system_metadata.get("adaptive")
    if not checks and result.timed_out_after_s is not None:
        # its answer was discarded with its trace: how sure its greedy answer was is not
        # known, so it counts as it ran (wrong, its time) under every target
        return Traced(
            id=result.id,
            greedy_confidence=float("-inf"),
            greedy_correct=False,
            greedy_seconds=result.latency_s,
            final_correct=_correct(result.scores),
            final_seconds=result.latency_s,
            escalated=True,
            final_confidence=0.0,
        )
    if not checks:
        raise TraceMissingError(
            f"question {result.id}: no adaptive trace in its metadata; run it with "
            "--system almanac-adaptive (or almanac-cascade-adaptive) at this version"
        )
    first, last = checks[0], checks[-1]
    final_correct = _correct(result.scores)
    escalated = len(checks) > 1 or last["samples"] > 1
    scores = result.alternative_scores  # a cascade's first tier: ``greedy:<tier>``
    greedy = scores.get("greedy") or next(
        (v for k, v in scores.items() if k.startswith("greedy:")), None
    )
    tail = max(0.0, result.latency_s - float(last["at_s"]))
    # no check at one candidate: the greedy draw gave none alone, so sampling went on
    alone = first["samples"] == 1
    return Traced(
        id=result.id,
        greedy_confidence=float(first["confidence"]) if alone else float("-inf"),
        greedy_correct=_correct(greedy) if escalated else final_correct,
        greedy_seconds=float(first["at_s"]) + tail if escalated else result.latency_s,
        final_correct=final_correct,
        final_seconds=result.latency_s,
        escalated=escalated,
        final_confidence=float(result.system_metadata.get("confidence") or 0.0),
    )


def highest_estimable(questions: Sequence[Traced]) -> float:
    """The highest target the run can speak for: the lowest greedy confidence among the
    questions that stopped at their greedy answer in the run (1.0 when none did). Under a
    higher target such a question would have drawn more samples, and what they would have
    given is not in the run."""
    stopped = [q.greedy_confidence for q in questions if not q.escalated]
    return min(stopped, default=1.0)


def sweep(
    adaptive: Sequence[QuestionResult],
    fixed: Sequence[QuestionResult] | None,
    targets: Sequence[float] = DEFAULT_TARGETS,
    *,
    ex_margin: float = 0.01,
    latency_share: float = 0.5,
) -> tuple[list[TargetLine], float, float, int]:
    """Each target's line, and the fixed vote's EX and mean latency, over the scored
    questions both runs answered (their number last). Without a ``fixed`` run every scored
    question counts, the vote's figures are NaN and no line ``meets``. Targets above
    :func:`highest_estimable` (a run at a target under 1.0) have no line."""
    fixed_by_id = {r.id: r for r in fixed if r.scored} if fixed is not None else None
    questions = [
        traced(r) for r in adaptive if r.scored and (fixed_by_id is None or r.id in fixed_by_id)
    ]
    if not questions:
        raise ValueError("the two runs have no scored question in common")
    vote_ex = vote_s = float("nan")
    if fixed_by_id is not None:
        vote = [fixed_by_id[q.id] for q in questions]
        vote_ex = sum(_correct(r.scores) for r in vote) / len(vote)
        vote_s = sum(r.latency_s for r in vote) / len(vote)
    ceiling = highest_estimable(questions)
    lines = []
    for target in (t for t in targets if t <= ceiling):
        outcomes = [q.at(target) for q in questions]
        ex = sum(correct for correct, _, _ in outcomes) / len(outcomes)
        mean_s = sum(seconds for _, seconds, _ in outcomes) / len(outcomes)
        share = mean_s / vote_s if vote_s else float("nan")
        confidences = [q.confidence_at(target) for q in questions]
        labels = [correct for correct, _, _ in outcomes]
        lines.append(
            TargetLine(
                target=target,
                ex=ex,
                mean_s=mean_s,
                latency_share=share,
                escalated_share=sum(up for _, _, up in outcomes) / len(outcomes),
                meets=ex >= vote_ex - ex_margin - 1e-9 and share <= latency_share,
                auroc=auroc(confidences, labels),
                ece=expected_calibration_error(confidences, labels),
            )
        )
    return lines, vote_ex, vote_s, len(questions)


def report(lines: Sequence[TargetLine], vote_ex: float, vote_s: float, count: int) -> str:
    """The sweep as a Markdown table, the vote's figures first (without a vote: its columns
    left out). AUROC and ECE are of the confidence each answer would have carried."""
    with_vote = not math.isnan(vote_ex)
    columns: list[tuple[str, str, Callable[[TargetLine], str]]] = [
        ("target", "---:", lambda line: f"{line.target:.2f}"),
        ("EX", "---:", lambda line: f"{line.ex:.3f}"),
        ("vs vote", "---:", lambda line: f"{100 * (line.ex - vote_ex):+.1f}"),
        ("mean latency", "---:", lambda line: f"{line.mean_s:.2f} s"),
        ("share of the vote's", "---:", lambda line: f"{100 * line.latency_share:.0f} %"),
        ("escalated", "---:", lambda line: f"{100 * line.escalated_share:.0f} %"),
        ("AUROC", "---:", lambda line: _fmt(line.auroc)),
        ("ECE", "---:", lambda line: _fmt(line.ece)),
        ("meets", ":---:", lambda line: "yes" if line.meets else ""),
    ]
    if not with_vote:
        columns = [c for c in columns if c[0] not in _VOTE_COLUMNS]
    head = (
        f"fixed vote on {count} questions: EX {vote_ex:.3f}, mean latency {vote_s:.2f} s"
        if with_vote
        else f"{count} questions, no fixed vote to compare with"
    )
    out = [
        head,
        "",
        "| " + " | ".join(name for name, _, _ in columns) + " |",
        "|" + "|".join(align for _, align, _ in columns) + "|",
    ]
    for line in lines:
        out.append("| " + " | ".join(cell(line) for _, _, cell in columns) + " |")
    return "\n".join(out)


_VOTE_COLUMNS = frozenset({"vs vote", "share of the vote's", "meets"})


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _correct(scores: dict[str, float] | None) -> bool:
    return bool(scores) and scores.get("ex", 0.0) >= 1.0  # type: ignore[union-attr]


def _targets(text: str) -> tuple[float, ...]:
    values = tuple(float(v) for v in text.split(",") if v.strip())
    if not values or any(not 0.0 <= v <= 1.0 for v in values):
        raise argparse.ArgumentTypeError(f"targets between 0 and 1, comma-separated: {text!r}")
    return values


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.adaptive_sweep",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--adaptive", type=Path, required=True, help="run at --adaptive-target 1")
    parser.add_argument(
        "--fixed", type=Path, help="the vote on the same questions (without it: no vote columns)"
    )
    parser.add_argument("--targets", type=_targets, default=DEFAULT_TARGETS, help="T,T,...")
    parser.add_argument("--ex-margin", type=float, default=0.01)
    parser.add_argument("--latency-share", type=float, default=0.5)
    parser.add_argument("--out", type=Path, help="also write the table here")
    args = parser.parse_args(argv)
    try:
        lines, vote_ex, vote_s, count = sweep(
            load_results(args.adaptive / "results.jsonl"),
            load_results(args.fixed / "results.jsonl") if args.fixed else None,
            args.targets,
            ex_margin=args.ex_margin,
            latency_share=args.latency_share,
        )
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = report(lines, vote_ex, vote_s, count)
    shown = {line.target for line in lines}
    left_out = [t for t in args.targets if t not in shown]
    if left_out:
        text += (
            f"\n\nTargets {', '.join(f'{t:.2f}' for t in left_out)} left out: the run stopped "
            "questions at their greedy answer with a confidence under them, and what more "
            "samples would have given those is not in the run (a run at --adaptive-target 1 "
            "speaks for every target)."
        )
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
