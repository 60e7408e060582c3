"""The systems that answer an analysis task: ``almanac-analysis`` (the analyst: plan, several
queries through the chain, tools, checked narrative) and ``one-sql`` (the baseline: the goal
asked once through the same chain, that one answer analysed and written up by the same tools
and narrative writer).

Both build the database's knowledge base as the bench's ``almanac`` system does (profiled
into one store, indices over it) and ask every query through its pipeline, never abstaining.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.analysis.models import AnalysisAnswer
from agents.analysis.run import AnalysisOptions, Analyst
from agents.pipeline import AskOptions
from bench.datasets.insightbench import InsightTask

SYSTEMS = ("almanac-analysis", "one-sql")


@dataclass(frozen=True)
class RunBounds:
    """Bounds of each task's analysis: sub-questions, wall time, the narrative's reply
    tokens and the seconds of the budget kept for it, and each query's deadline and rows.
    ``ask_goal``: the analyst asks the goal itself as its first sub-question too, so its
    evidence holds the one-SQL baseline's (on the first 20 InsightBench tasks the 1.5B model
    answered 19 goals with rows); off, only the plan's sub-questions are asked."""

    max_steps: int = 3
    time_budget_s: float = 120.0
    ask_deadline_s: float = 60.0
    max_rows: int = 200
    narrative_tokens: int = 700
    narrative_reserve_s: float = 0.0
    ask_goal: bool = True

    def analysis_options(self) -> AnalysisOptions:
        return AnalysisOptions(
            max_steps=self.max_steps,
            max_seconds=self.time_budget_s,
            analysis_only=True,
            narrative_tokens=self.narrative_tokens,
            direct=self.ask_goal,
            narrative_reserve_s=self.narrative_reserve_s,
        )

    def ask_options(self) -> AskOptions:
        return AskOptions(abstain=False, deadline_s=self.ask_deadline_s, max_rows=self.max_rows)


class AnalysisSystem:
    """Answers InsightBench tasks: the analyst (``almanac-analysis``) or the baseline (``one-sql``).

    Args:
        name: ``almanac-analysis`` or ``one-sql``.
        bounds: the analysis bounds.
        options: the bench's model options (``model``, ``threads``, ``llm_cache``; ``llm``
            and ``embedder`` replace the model and embedder in tests), as ``almanac`` takes
            them.
    """

    def __init__(self, name: str, bounds: RunBounds | None = None, **options: Any) -> None:
        if name not in SYSTEMS:
            raise ValueError(f"unknown analysis system {name!r}; one of {SYSTEMS}")
        from bench.systems import make_system

        self.name = name
        self.bounds = bounds or RunBounds()
        self.almanac: Any = make_system("almanac", **options)

    def answer(self, task: InsightTask) -> AnalysisAnswer:
        """The analysis of ``task``'s goal on its database."""
        return self.analyse(task.id, f"sqlite:///{task.database_path}", task.goal)

    def analyse(self, database_name: str, url: str, question: str) -> AnalysisAnswer:
        """The analysis of ``question`` on database ``database_name`` at ``url`` (profiled
        into the store, with the knowledge pack beside it, on first use)."""
        self.almanac.prepare({database_name: url})
        pipeline = self.almanac.pipeline_on(database_name)
        ask = self.bounds.ask_options()
        analyst = Analyst(
            lambda sub_question: pipeline.ask(sub_question, None, ask),
            pipeline.default_llm,
            self.bounds.analysis_options(),
            database=pipeline.database,
        )
        if self.name == "one-sql":
            return analyst.analyze_one_sql(question)
        return analyst.analyze(question, schema_text=pipeline.catalog.overview().text)
