"""The refine agent: run each candidate read-only, and repair what fails.

For one candidate:
1. execute it on the target database (read-only, row cap, time limit);
2. on an empty result, check its predicate values against the profiled enums and rewrite the
   literals that are certainly wrong (case, spacing, a known synonym) without asking the model;
3. on an error, an empty result or a reply without SQL, continue the conversation that wrote
   it: the failing SQL and what went wrong (the database error, or the literals that are not
   stored values with the closest ones) go back to the model, which answers with a new query;
   up to ``rounds`` times. The prompt prefix is unchanged, so a local model's cache is reused;
4. when the database still rejects it (or there is no model to ask), move column references
   qualified with the wrong table to the one table of the query that has the column
   (``agents/sql/column_fix.py``), kept only when the query then runs.

An empty result of a query comparing dates with "now" on data that ends before today runs
again with "now" read as the data's newest date, kept (noted) when it returns data
(``agents/sql/now_anchor.py``). A query rejected for a column that is an alias of its own
SELECT list, used where the database reads no alias (a window, WHERE), is run with the
alias written out before the model is asked (``agents/sql/alias_inline.py``). A query that
ran but joins a table on a condition that
links nothing (``ON a.id = a.id``: ``agents/sql/join_check.py``) goes back to the model as
a problem too; when the repairs do not fix it, the query is kept as it ran.

Before any of it runs, a query gets the default filters of the question's rules it lacks
(``caliber = 'B'`` from the user's profile, ``agents/sql/default_filters.py``) and, on
SQLite, differences of dates stored as text computed in days (``agents/sql/date_arithmetic.py``);
when the database rejects the rewritten query, the query as written runs.

Every query runs under the target database's own time limit (``Database.timeout_s``, the
server's ``ALMANAC_TARGET_TIMEOUT_S``); ``RefineOptions.timeout_s`` may only lower it. When
the question has a deadline (``RefineOptions.deadline``), a query gets at most the time left,
no query starts and no repair is asked once it has passed: the candidate is returned as it
stands, with a note saying why.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace

from agents.answer import Candidate
from agents.llm.base import LLM, LLMError, Message
from agents.rag.question_facts import PeriodPin
from agents.sql.alias_inline import inline_alias, missing_column
from agents.sql.column_fix import ColumnQualifierFix
from agents.sql.default_filters import DefaultFilter
from agents.sql.extract import strip_comments
from agents.sql.generate import candidate_from_reply, fence_options
from agents.sql.join_check import unlinked_joins
from agents.sql.now_anchor import NowAnchor
from agents.sql.predicates import PredicateChecker, PredicateIssue
from agents.sql.profile_tables import OwnTables
from agents.sql.refine_steps import (
    DEADLINE_NOTE,
    Problem,
    kept,
    new_notes,
    query_key,
    rewritten,
    stopped,
    with_data,
)
from agents.sql.rewrites import QueryRewriter
from agents.templates import render
from kb.target.database import Database
from kb.target.results import Results

log = logging.getLogger(__name__)


@dataclass
class RefineOptions:
    """How candidates are executed and repaired.

    ``timeout_s``: time limit per query; None is the database's own limit, and a value above
    it is lowered to it (the operator's limit holds for every query the model writes).
    ``deadline``: a ``time.monotonic()`` instant (the question's deadline, set per question by
    the pipeline) after which no query starts and no repair is asked; a query started before
    it gets at most the time left. None: no deadline.
    """

    rounds: int = 2
    max_rows: int = 1000
    timeout_s: float | None = None
    repair_empty: bool = True
    max_tokens: int = 320
    model_repairs: bool = True  # False: only the predicate fixes that need no model
    # a voting tier repairs every failed sample, even one whose repair cannot change the
    # answer (agents.sql.tier_run; default: only while it could): slower, and the vote share
    # then counts what the repairs gave
    repair_all: bool = False
    fenced: bool = True  # repairs start inside a ```sql fence (see GenerateOptions)
    fix_columns: bool = True  # re-qualify misplaced column references before asking the model
    # a query that ran but joins a table ON a condition linking nothing (a.id = a.id) is
    # shown to the model as a problem (agents.sql.join_check)
    check_joins: bool = True
    deadline: float | None = None
    # the rules' default filters for this question (set per question by the pipeline):
    # added to every query that reads a table with the column and never mentions it
    default_filters: tuple[DefaultFilter, ...] = ()
    # the asker's own tables for another entity's ("our" brand: agents.sql.profile_tables)
    own_tables: OwnTables | None = None
    # the one period the question's time words settle (agents.sql.period_pin)
    pinned_period: PeriodPin | None = None


class Refiner:
    """Executes and repairs candidates.

    Args:
        database: the target database (read-only access).
        llm: the model that repairs; None to only execute and fix predicates.
        checker: the predicate checker; None to skip predicate checks.
        options: rounds, row cap and time limit.
    """

    def __init__(
        self,
        database: Database,
        llm: LLM | None = None,
        checker: PredicateChecker | None = None,
        options: RefineOptions | None = None,
    ) -> None:
        self.database, self.llm, self.checker = database, llm, checker
        self.options = options or RefineOptions()
        self.columns = ColumnQualifierFix(database, database.dialect)
        options = self.options
        self.rewriter = QueryRewriter(
            database, options.default_filters, options.own_tables, options.pinned_period
        )
        self.now = NowAnchor(database)

    def execute(self, candidate: Candidate) -> Candidate:
        """Run ``candidate`` (if it has SQL) and keep the results on it; past the deadline it
        is not run and carries a timeout instead. It is rewritten first (the default filters
        it lacks, day differences: :mod:`agents.sql.rewrites`), with a note per change; when
        the database rejects the rewritten query, what the model wrote runs instead."""
        if not candidate.sql:
            return candidate
        limit = self.query_limit()
        if limit is None:
            candidate.results = Results.failure(
                "timeout", f"not run: {DEADLINE_NOTE}", sql=candidate.sql, elapsed=0.0
            )
            return candidate
        ran = self.rewriter.execute(
            candidate.sql, max_rows=self.options.max_rows, time_limit=self.query_limit
        )
        candidate.sql, candidate.results = ran.sql, ran.results
        candidate.notes = [*candidate.notes, *new_notes(ran.notes, candidate.notes)]
        return candidate

    def query_limit(self) -> float | None:
        """The time limit of the next query: the database's limit, lowered by
        ``options.timeout_s`` and by the time left before the deadline; None once the deadline
        has passed."""
        limit = self.database.timeout_s
        if self.options.timeout_s is not None:
            limit = min(limit, self.options.timeout_s)
        if self.options.deadline is not None:
            left = self.options.deadline - time.monotonic()
            if left <= 0:
                return None
            limit = min(limit, left)
        return limit

    def past_deadline(self) -> bool:
        """Whether the question's deadline (if any) has passed: draw and repair no more."""
        deadline = self.options.deadline
        return deadline is not None and time.monotonic() >= deadline

    def needs_repair(self, candidate: Candidate) -> bool:
        """Whether the executed ``candidate`` failed, or returned nothing, in a way :meth:`refine`
        would try to repair."""
        return self._problem(candidate) is not None

    def refine(
        self, candidate: Candidate, messages: list[Message], *, executed: bool = False
    ) -> Candidate:
        """Execute ``candidate`` (unless ``executed``: it already ran) and repair it up to
        ``rounds`` times; returns the last version."""
        current = candidate if executed else self.execute(candidate)
        ran = with_data(current)
        history = list(messages)
        tried = {query_key(current.sql)}
        for attempt in range(1, self.options.rounds + 1):
            problem = self._problem(current)
            if problem is None:
                return current
            if self.past_deadline():
                return stopped(kept(current, ran))
            if current.sql and problem.issues:
                fixed = self._fix_predicates(current, problem.issues)
                if fixed is None:
                    fixed = self._guess_predicates(current, problem.issues)
                if fixed is not None:
                    current = fixed
                    continue
            if current.sql and problem.empty:
                anchored = self._anchor_now(current)
                if anchored is not None:
                    current = anchored
                    continue
            if current.sql and problem.rejected:
                inlined = self._inline_alias(current)
                if inlined is not None:
                    current = inlined
                    continue
            if self.llm is None or not problem.repairable or not self.options.model_repairs:
                return kept(self._without_model(current, problem), ran)
            repaired = self._repair(current, history, problem, attempt)
            if repaired is None:
                return kept(self._without_model(current, problem), ran)
            current = repaired
            ran = with_data(current) or ran
            if repaired.sql and query_key(repaired.sql) in tried:
                # a query it already wrote fails the same way: another round would be spent
                # showing the model the same problem (greedy repairs rarely leave such a loop)
                current.notes = [*current.notes, "repairs stopped: the same query again"]
                break
            tried.add(query_key(repaired.sql))
        problem = self._problem(current)
        if problem is None:
            return current
        if self.past_deadline():
            return stopped(kept(current, ran))
        return kept(self._without_model(current, problem), ran)

    def _without_model(self, candidate: Candidate, problem: Problem) -> Candidate:
        """The last resort when the model cannot (or did not) repair a rejected query.

        Moving misplaced column references comes after the model's rounds: a query that
        failed may also join a table it does not need, which the model's repair (it sees
        the error) often drops and the mechanical fix keeps (Spider 60, 1.5B, fix first:
        one question lost, none won).
        """
        if candidate.sql and problem.rejected and self.options.fix_columns:
            return self._fix_columns(candidate) or candidate
        return candidate

    def _problem(self, candidate: Candidate) -> Problem | None:
        results = candidate.results
        if results is None:
            return None
        if results.error:
            if results.error.startswith("model failed"):
                return Problem(results.error, repairable=False)
            if not candidate.sql:
                return Problem("Your reply had no SQL query. Answer with one ```sql block.")
            if results.error_kind == "connection":
                return Problem(results.error, repairable=False)
            return Problem(
                f"The database rejected it: {results.error}", rejected=results.error_kind == "sql"
            )
        if not results.has_data and self.options.repair_empty:
            issues = self.checker.check(candidate.sql) if self.checker else []
            lines = [i.describe() for i in issues]
            text = (
                "It ran but returned no rows."
                if results.row_count == 0
                else "It ran but returned only NULL: no row matched its filters."
            )
            if lines:
                text += " " + " ".join(lines) + "."
            return Problem(text, issues=issues, empty=True)
        if self.options.check_joins and candidate.sql:
            unlinked = unlinked_joins(candidate.sql, self.database.dialect)
            if unlinked:
                return Problem(
                    f"It ran, but {'; '.join(unlinked)}: every row of one table is paired "
                    "with every row of the other. Join on the columns that link the tables."
                )
        return None

    def _inline_alias(self, candidate: Candidate) -> Candidate | None:
        """``candidate`` with the alias the database could not read written out
        (:mod:`agents.sql.alias_inline`), when the query then runs."""
        results = candidate.results
        name = missing_column(results.error or "") if results is not None else None
        inlined = inline_alias(candidate.sql, name, self.database.dialect) if name else None
        if inlined is None:
            return None
        ran = self.execute(rewritten(candidate, inlined.sql, inlined.notes))
        return ran if ran.results is not None and ran.results.ok else None

    def _anchor_now(self, candidate: Candidate) -> Candidate | None:
        """``candidate`` run with "now" read as the newest date of the data it compares
        with it (:mod:`agents.sql.now_anchor`), when that returns data."""
        limit = self.query_limit()
        anchored = self.now.anchored(candidate.sql, timeout_s=limit)
        if anchored is None or limit is None:
            return None
        ran = self.execute(rewritten(candidate, anchored.sql, anchored.notes))
        return ran if ran.results is not None and ran.results.has_data else None

    def _fix_columns(self, candidate: Candidate) -> Candidate | None:
        """``candidate`` with misplaced column references moved, if that makes it run."""
        moved = self.columns.apply(candidate.sql)
        if moved is None:
            return None
        fixed = self.execute(
            rewritten(candidate, moved.sql, [f"column moved: {n}" for n in moved.notes])
        )
        if fixed.results is None or fixed.results.error:
            return None
        return fixed

    def _guess_predicates(
        self, candidate: Candidate, issues: list[PredicateIssue]
    ) -> Candidate | None:
        """A literal that is no stored value, with exactly one stored value close to it
        ('GAL' when the column holds 'ZP3' and the synonym "Gale"): try that value, and keep
        the guess only when the query then returns data."""
        single = [
            replace(i, certain=True) for i in issues if not i.certain and len(i.suggestions) == 1
        ]
        if not single:
            return None
        guessed = self._fix_predicates(candidate, single, label="predicate guessed")
        if guessed is None or guessed.results is None or not guessed.results.has_data:
            return None
        return guessed

    def _fix_predicates(
        self, candidate: Candidate, issues: list[PredicateIssue], *, label: str = "predicate fixed"
    ) -> Candidate | None:
        assert self.checker is not None
        try:
            sql = self.checker.apply(candidate.sql, issues)
        except Exception as exc:  # a rewrite we cannot parse back is simply not applied
            log.debug("predicate rewrite failed on %r: %s", candidate.sql, exc)
            return None
        if sql is None:
            return None
        notes = [
            f"{label}: {i.table}.{i.column}: '{i.literal}' -> '{i.suggestions[0]}'"
            for i in issues
            if i.certain
        ]
        return self.execute(rewritten(candidate, sql, notes))

    def _repair(
        self, candidate: Candidate, history: list[Message], problem: Problem, attempt: int
    ) -> Candidate | None:
        assert self.llm is not None
        shown = strip_comments(candidate.sql) if candidate.sql else "(no SQL)"
        history.append({"role": "assistant", "content": f"```sql\n{shown}\n```"})
        history.append({"role": "user", "content": render("repair.j2", problem=problem.text)})
        try:
            reply = self.llm.chat(
                history,
                max_tokens=self.options.max_tokens,
                temperature=0.0,
                seed=candidate.sample,
                **fence_options(self.options.fenced),
            )
        except LLMError as exc:
            log.warning("repair %d failed: %s", attempt, exc)
            return None
        repaired = candidate_from_reply(reply.text, candidate.model, candidate.sample)
        repaired.tier = candidate.tier
        repaired.repairs = candidate.repairs + 1
        repaired.notes = [*candidate.notes, f"repair {attempt}: {problem.text[:200]}"]
        repaired.prompt_tokens = candidate.prompt_tokens + reply.prompt_tokens
        repaired.completion_tokens = candidate.completion_tokens + reply.completion_tokens
        if repaired.sql:  # the confidence signals read the SQL that is answered with
            repaired.scored_by(reply.completions[0].logprobs)
        if not repaired.sql:
            return repaired  # a failed candidate; the next round may try again
        return self.execute(repaired)
