"""One tier's sampling run: draw candidates, execute and repair them, stop when two agree.

:class:`TierRun` is what :class:`~agents.sql.cascade.Cascade` does inside one tier. Draws
(``together`` samples per model call) are submitted to a pool of ``parallel`` workers; after
each finished draw the run checks for an agreement (two candidates with the same non-empty
result) and, in a tier that ``escalates``, whether an agreement is still possible at all. In
either case it cancels what is left; with adaptive sampling (``Tier.confident``) the greedy
draw goes alone and the run stops as soon as the rule finds the answer confident.
When it stops, it cancels what is left: queued draws never start, a running draw's model call
stops (the run's :class:`~agents.llm.base.Cancellation`, a child of the caller's: a job's
cancel or a question's deadline reaches the draws on the pool's threads too) and it executes
nothing more of its batch.

In a voting tier (one that does not give up early) a draw's samples all run before any is
repaired, and a failed (or empty) sample is repaired only while its repair could still change
the vote: once the leading result has more votes than the runner-up could reach with every
unsettled sample, the rest keep their failure and a note (``NOT_REPAIRED_NOTE``), saving the
repairs' model calls (a round is a reply of up to ``RefineOptions.max_tokens`` tokens); the
answer is the one every repair would have given. A tier that gives up early repairs each
sample before the next runs, since whether two can still agree depends on the repairs.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agents.answer import Candidate
from agents.llm.base import Cancellation, Message, cancellation_scope, current_cancellation
from agents.sql.vote import agreement, vote

if TYPE_CHECKING:
    from agents.sql.cascade import Tier

log = logging.getLogger(__name__)

NOT_REPAIRED_NOTE = "not repaired: the vote was decided without it"


@dataclass
class TierResult:
    """What one tier produced: its candidates (by sample), the agreed winner or None, and
    the samples it cancelled."""

    candidates: list[Candidate]
    agreed: Candidate | None
    cancelled: int


class TierRun:
    """One run of ``tier`` on ``messages`` (see the module docstring).

    A tier that ``escalates`` stops as soon as two agreeing results have become impossible
    (a failed or empty candidate cannot agree): a small model's greedy answer that fails
    leaves one sample, which cannot agree with anything, so the next tier starts at once.
    """

    def __init__(
        self,
        tier: Tier,
        messages: list[Message],
        *,
        dialect: str,
        on_candidate: Callable[[Candidate], None] | None = None,
        escalates: bool = False,
    ) -> None:
        self.tier, self.messages, self.dialect = tier, messages, dialect
        self.on_candidate = on_candidate
        self.adaptive = tier.confident is not None
        # stops when two can no longer agree (adaptive sampling: the rule decides instead)
        self.gives_up = escalates and tier.stop_early and not self.adaptive
        self.found: list[Candidate] = []
        self.pending: dict[Future[list[Candidate]], list[int]] = {}
        self.next_index = 0
        self.cancel = threading.Event()
        self.token = Cancellation(parent=current_cancellation())  # stops the draws' calls
        self.size = max(1, tier.together)

    def run(self) -> TierResult:
        tier = self.tier
        pool = ThreadPoolExecutor(max_workers=max(1, tier.parallel), thread_name_prefix=tier.name)
        try:
            self._submit(pool)
            while self.pending:
                done, _ = wait(self.pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: self.pending[f][0]):
                    self.pending.pop(future)
                    try:
                        drawn = future.result()
                    except _Cancelled:
                        continue
                    for candidate in drawn:
                        self.found.append(candidate)
                        if self.on_candidate is not None:
                            self.on_candidate(candidate)
                if tier.confident is not None:
                    sure = tier.confident(self.found) if self.found else None
                    if sure is not None:
                        return self._stop(sure)
                    self._submit(pool)
                    continue
                agreed = agreement(self.found, self.dialect) if tier.stop_early else None
                hopeless = self.gives_up and usable(self.found) + self._unfinished() < 2
                if (agreed is not None and len(self.found) >= 2) or hopeless:
                    return self._stop(agreed)
                self._submit(pool)
        finally:
            # samples still running after an agreement finish in the background, unread
            pool.shutdown(wait=False, cancel_futures=True)
        self.found.sort(key=lambda c: c.sample)
        return TierResult(self.found, None, 0)

    def _unfinished(self) -> int:
        return self.tier.samples - self.next_index + sum(map(len, self.pending.values()))

    def _stop(self, agreed: Candidate | None) -> TierResult:
        self.cancel.set()
        self.token.cancel(f"tier {self.tier.name} stopped: its answer is decided")
        cancelled = (self.tier.samples - self.next_index) + sum(
            len(self.pending[f]) for f in self.pending if f.cancel()
        )
        if agreed is None:
            log.info("tier %s cannot agree any more; escalating", self.tier.name)
            self.found.sort(key=lambda c: c.sample)
        return TierResult(self.found, agreed, cancelled)

    def _submit(self, pool: ThreadPoolExecutor) -> None:
        """Queue draws until ``parallel`` are in flight or every sample is drawn."""
        tier = self.tier
        while self.next_index < tier.samples and len(self.pending) < max(1, tier.parallel):
            size = 1 if self.adaptive and self.next_index == 0 else self.size  # greedy alone
            indices = list(range(self.next_index, min(tier.samples, self.next_index + size)))
            others = usable(self.found) + sum(map(len, self.pending.values()))
            # a fresh copy of this thread's context per draw: the token reaches the draw
            context = contextvars.copy_context()
            self.pending[pool.submit(context.run, self._draw_stoppable, indices, others)] = indices
            self.next_index = indices[-1] + 1

    def _draw_stoppable(self, indices: list[int], others: int) -> list[Candidate]:
        with cancellation_scope(self.token):
            return self._draw(indices, others)

    def _draw(self, indices: list[int], others: int) -> list[Candidate]:
        """Candidates ``indices``, refined; ``others``: candidates outside this draw that
        could still agree with them (usable or unfinished when it was submitted)."""
        if self.cancel.is_set() or self.tier.refiner.past_deadline():
            raise _Cancelled  # no longer needed, or too late to be executed
        started = time.perf_counter()
        drawn = self.tier.generator.draw(self.messages, indices)
        # a joint decode's time in equal shares, so the stage sums it once
        share = (time.perf_counter() - started) / max(1, len(drawn))
        if self.gives_up:
            return self._refine_in_turn(drawn, indices, others, share)
        return self._run_then_repair(drawn, share)

    def _refine_in_turn(
        self, drawn: list[Candidate], indices: list[int], others: int, share: float
    ) -> list[Candidate]:
        """A tier that gives up: each sample executed and repaired before the next runs, and
        none once two agreeing results have become impossible (a small model's failed greedy
        answer leaves its batch mate nothing to agree with)."""
        tier = self.tier
        refined_all: list[Candidate] = []
        for position, candidate in enumerate(drawn):
            later = len(drawn) - position + tier.samples - 1 - indices[-1]
            if self.cancel.is_set() or others + usable(refined_all) + later < 2:
                break  # a draw of this batch that can no longer matter is not executed
            candidate.tier = tier.name
            refining = time.perf_counter()
            refined = tier.refiner.refine(candidate, self.messages)
            refined.tier, refined.generate_seconds = tier.name, share
            refined.refine_seconds = time.perf_counter() - refining
            refined_all.append(refined)
        return refined_all

    def _run_then_repair(self, drawn: list[Candidate], share: float) -> list[Candidate]:
        """A voting tier: every sample of the draw runs, then the failed ones are repaired
        while a repair can still change the vote (see the module docstring)."""
        tier = self.tier
        settled: list[Candidate] = []
        failing: list[Candidate] = []
        for candidate in drawn:
            if self.cancel.is_set():
                break
            candidate.tier, candidate.generate_seconds = tier.name, share
            running = time.perf_counter()
            tier.refiner.execute(candidate)
            candidate.refine_seconds = time.perf_counter() - running
            (failing if tier.refiner.needs_repair(candidate) else settled).append(candidate)
        for candidate in failing:  # the draw ran; now repair what can still change the vote
            if self.cancel.is_set():
                break
            if self._decided(settled):
                candidate.notes = [*candidate.notes, NOT_REPAIRED_NOTE]
                settled.append(candidate)
                continue
            repairing = time.perf_counter()
            refined = tier.refiner.refine(candidate, self.messages, executed=True)
            refined.tier, refined.generate_seconds = tier.name, share
            refined.refine_seconds = candidate.refine_seconds + time.perf_counter() - repairing
            settled.append(refined)
        return sorted(settled, key=lambda c: c.sample)

    def _decided(self, settled: list[Candidate]) -> bool:
        """Whether the tier's vote is decided whatever the samples not settled yet return:
        its leading result (with rows) has more votes than the runner-up could reach if every
        unsettled sample (unrepaired, still drawing or not drawn) joined it. Repairing a
        failed sample then cannot change the answer, only cost a model call."""
        if self.tier.refiner.options.repair_all:
            return False
        known = [*list(self.found), *settled]
        outcome = vote(known, dialect=self.dialect)
        winner = outcome.winner
        if winner is None or winner.results is None or not winner.results.has_data:
            return False
        runner_up = len(outcome.groups[1]) if len(outcome.groups) > 1 else 0
        return outcome.support > runner_up + (self.tier.samples - len(known))


def usable(candidates: list[Candidate]) -> int:
    """Candidates that could still be part of an agreement (executed, with rows)."""
    return sum(1 for c in candidates if c.ok and c.results is not None and c.results.has_data)


class _Cancelled(Exception):
    """A sample that was no longer needed when its turn came."""
