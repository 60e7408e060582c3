"""The questions ``make demo`` prints, one per AutoFin trait, each with its gold SQL.

``server.cli.run_demo`` prints them (a curl for the first, the list with the trait each one
shows); ``tests/server/test_demo_questions.py`` asks each with the real models in the demo's
configuration and checks its rows against the gold query's. A question that needs a query
time or a user profile carries it: it is part of the ``/v1/ask`` body (:meth:`ask_body`).
Profiles are AutoFin's own (:mod:`bench.autofin.profiles`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from bench.autofin.questions.slots import CONTEXT, IMPLICIT, PRIVATE, WIDE


@dataclass(frozen=True)
class DemoQuestion:
    """A question as a user would ask it, what it shows, and the SQL that answers it."""

    trait: str  # one of bench.autofin.questions.slots.TRAITS
    shows: str  # one line: what answering it takes
    question: str
    gold_sql: str
    query_time: str | None = None  # ISO time the question is asked at
    user_profile: dict[str, str] = field(default_factory=dict)

    @property
    def context(self) -> dict[str, Any]:
        """The ``context`` of a ``/v1/ask`` body (empty when the question needs none)."""
        context: dict[str, Any] = {}
        if self.query_time:
            context["query_time"] = self.query_time
        if self.user_profile:
            context["user_profile"] = dict(self.user_profile)
        return context

    def ask_body(self) -> str:
        """The JSON body of ``POST /v1/ask`` for this question, on one line."""
        body: dict[str, Any] = {"question": self.question}
        if self.context:
            body["context"] = self.context
        return json.dumps(body)


def _profile(
    user: str, role: str, region: str, department: str, currency: str, caliber: str
) -> dict[str, str]:
    return {
        "user": user,
        "role": role,
        "region": region,
        "department": department,
        "currency": currency,
        "caliber": caliber,
    }


DEMO_QUESTIONS: tuple[DemoQuestion, ...] = (
    DemoQuestion(
        trait=PRIVATE,
        shows="'revenue' is the knowledge pack's metric (report_item_level1 = 'Revenue', "
        "costs left out); a caliber is always filtered",
        question="What was Nova revenue in June 2024 in USD, caliber B?",
        gold_sql="SELECT SUM(ptd_amt_usd) AS revenue FROM income_nova WHERE period = '202406' "
        "AND caliber = 'B' AND report_item_level1 = 'Revenue'",
    ),
    DemoQuestion(
        trait=IMPLICIT,
        shows="no period: the newest published month at the query time; no caliber: the profile's",
        question="Aurora vehicle sales revenue?",
        gold_sql="SELECT SUM(ptd_amt_usd) AS vehicle_revenue FROM income_aurora "
        "WHERE period = '202409' AND caliber = 'A' AND report_item_code = 'REV_VEH'",
        query_time="2024-09-20T16:30:00Z",
        user_profile=_profile("d.khan", "analyst", "MEA", "HX", "USD", "A"),
    ),
    DemoQuestion(
        trait=WIDE,
        shows="one of the wide income table's 71 columns: the month's amount in euros "
        "(ptd_amt_eur, not ptd_amt_usd or a currency filter)",
        question="What was Nova revenue in June 2024 in EUR, caliber A?",
        gold_sql="SELECT SUM(ptd_amt_eur) AS revenue FROM income_nova WHERE period = '202406' "
        "AND caliber = 'A' AND report_item_level1 = 'Revenue'",
    ),
    DemoQuestion(
        trait=CONTEXT,
        shows="'our' is the asker's brand (Borealis); 'YTD' the fiscal year (from April) "
        "up to the query time",
        question="Our monthly revenue YTD?",
        gold_sql="SELECT period, SUM(ptd_amt_usd) AS revenue FROM income_borealis "
        "WHERE period BETWEEN '202404' AND '202503' AND caliber = 'A' "
        "AND report_item_level1 = 'Revenue' GROUP BY period ORDER BY period",
        query_time="2025-03-28T10:30:00Z",
        user_profile=_profile("c.miller", "executive", "NAM", "BO", "USD", "A"),
    ),
)
