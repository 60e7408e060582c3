"""What the chain answers in the analysis tests: the rows a given SQL returns."""

from __future__ import annotations

from agents.answer import Answer
from kb.target.database import Database


def answer_of(database: Database, question: str, sql: str) -> Answer:
    """What the chain answers when it writes ``sql`` for ``question``."""
    ran = database.execute(sql)
    return Answer(
        id="a",
        question=question,
        database="income",
        sql=sql,
        columns=ran.columns,
        rows=[list(r) for r in ran.rows],
        row_count=ran.row_count,
        executed=True,
    )
