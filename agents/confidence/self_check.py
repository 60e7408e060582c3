"""The model's own verdict on an answer, as a probability ("P(True)"): shown the schema,
the question and the SQL, it is asked whether the query returns what the question asks, and
the probability it gives its one-word answer is read from its token log probabilities.

A reply starting with "yes" at probability p gives ``p``; one starting with "no" gives
``1 - p`` (the rest of the mass is taken as "yes": the two words hold nearly all of it
when the model follows the instruction); any other reply, or no log probability, gives
None (the signal is left out, never made up). The reply is asked for two tokens: the last
token of a reply has no log probability (:mod:`agents.llm.logprobs`).

Which answers it tells apart, and whether it adds to the other signals, is measured by
``python -m bench.self_check`` on recorded runs before the signal is read by the
calibrator.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

from agents.llm.base import LLM, LLMError
from agents.templates import render
from kb.target.database import Database

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Verdict:
    """The reply's first word and the probability that the query is right (None: unread)."""

    word: str
    p_yes: float | None


class SelfCheck:
    """Asks ``llm`` whether a query answers its question (see the module docstring)."""

    def __init__(self, llm: LLM, *, timeout_s: float | None = 60.0) -> None:
        self.llm = llm
        self.timeout_s = timeout_s

    def verdict(self, question: str, schema: str, sql: str) -> Verdict:
        prompt = render("self_check.j2", schema=schema.strip(), question=question, sql=sql.strip())
        try:
            reply = self.llm.chat(
                [{"role": "user", "content": prompt}],
                temperature=0.0,
                max_tokens=2,
                timeout=self.timeout_s,
            )
        except LLMError as exc:
            log.warning("self-check failed for %r: %s", question[:120], exc)
            return Verdict("", None)
        completion = reply.completions[0]
        return verdict_of(completion.text, completion.logprobs)


def verdict_of(text: str, logprobs: tuple[float, ...] | None) -> Verdict:
    """The verdict of one reply (see the module docstring)."""
    word = text.strip().lower()
    if not logprobs or not word.startswith(("yes", "no")):
        return Verdict(word[:20], None)
    p = math.exp(logprobs[0])
    return Verdict(word[:20], p if word.startswith("yes") else 1.0 - p)


def schema_ddl(database: Database) -> str:
    """``database``'s tables as short CREATE TABLE statements (columns with their types,
    the primary key, foreign keys): the schema the self-check prompt shows when no
    retrieved schema is at hand."""
    statements = []
    for name, info in database.reflect().items():
        parts = [f"{c.name} {c.type}".strip() for c in info.columns]
        if info.primary_key:
            parts.append(f"PRIMARY KEY ({', '.join(info.primary_key)})")
        for key in info.foreign_keys:
            parts.append(
                f"FOREIGN KEY ({', '.join(key.columns)}) REFERENCES "
                f"{key.ref_table} ({', '.join(key.ref_columns)})"
            )
        statements.append(f"CREATE TABLE {name} ({', '.join(parts)});")
    return "\n".join(statements)
