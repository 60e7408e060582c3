"""The hints of a RAG prompt, and the record of the knowledge that went into it.

Hints are short lines the SQL writer reads above the question:

- links from the user's profile to stored values ("profile department=TI ->
  income_titan.dept_code = 'TI'");
- business knowledge (rules, metrics, predicates, glossary, taxonomies), whole;
- links from question words to the tables, columns and values the prompt shows
  (``"France" -> singer.Country = 'France'``), one per phrase and never for a phrase that a time
  window or the answer's currency resolves later.

All within a token budget, named or triggered knowledge first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.answer import UsedKnowledge
from agents.rag.currency_phrases import answer_currency_spans, is_local_currency_column
from agents.rag.hint_links import precise_links
from agents.rag.table_rank import BUSINESS_TYPES, named
from agents.rag.value_catalog import ValueCatalog
from indices.evidence import EvidenceItem, estimate_tokens
from ukf import MINING_KEY

PROFILE_MAX_TABLES = 2
Span = tuple[int, int]


@dataclass(frozen=True)
class ProfileLink:
    """A user-profile value found in one column of the database."""

    table: str
    column: str
    text: str


def link_profile(values: ValueCatalog, profile: Mapping[str, Any]) -> list[ProfileLink]:
    """Profile values that are stored values of the database ("department=TI" ->
    income_titan.dept_code = 'TI'), when they point at few tables."""
    links: list[ProfileLink] = []
    for key, value in profile.items():
        if not isinstance(value, str) or len(value.strip()) < 2:
            continue
        found = values.holders(value.strip())
        if len({h.table for h in found}) > PROFILE_MAX_TABLES:
            # common values: keep the tables that hold only this value (income_titan
            # has dept_code 'TI' on every row: it is the table *of* that department)
            found = [h for h in found if h.identifies_table]
        if not found or len({h.table for h in found}) > 3:
            continue
        for h in found:
            text = f"profile {key}={value} -> {h.table}.{h.column} = '{h.value}'"
            links.append(ProfileLink(h.table, h.column, text))
    return links


def compose_hints(
    question: str,
    items: Sequence[EvidenceItem],
    *,
    shown_tables: set[str],
    first: Sequence[str] = (),
    time_spans: Sequence[Span] = (),
    budget_tokens: int,
) -> list[str]:
    """The hint lines for ``question`` from its evidence ``items``.

    Args:
        question: the question the spans of the items point into.
        items: the evidence, in retrieval order.
        shown_tables: tables the prompt shows; links into other tables are left out.
        first: lines that come before the others and outside the budget (profile links).
        time_spans: spans of time phrases, resolved to periods elsewhere in the prompt.
        budget_tokens: the most tokens the other lines may take together.
    """
    used = 0
    hints = list(first)
    currency_spans = answer_currency_spans(question)
    # named or triggered knowledge first, then the rest in evidence order
    ordered = sorted(items, key=lambda i: not (named(i) or i.entry.triggers))
    precise = {id(i) for i in precise_links(ordered)}
    for item in ordered:
        if item.entry.type in BUSINESS_TYPES:
            text = (item.text or item.entry.text()).strip()
        elif item.entry.type in ("table", "column", "enum") and named(item):
            if item.entry.content_resources.get("table") not in shown_tables:
                continue  # a link into a table the prompt does not show
            if item.spans and id(item) not in precise:
                continue  # inside a longer link, or an ambiguous reading not anchored
            if item.spans and all(_inside(s, time_spans) for s in item.spans):
                continue  # a time phrase, resolved to periods after the question
            local = is_local_currency_column(item.entry.content_resources.get("column", ""))
            if local and item.spans and all(_inside(s, currency_spans) for s in item.spans):
                continue  # "in JPY" names the answer's currency, resolved after it
            text = link_text(item, question)
        else:
            continue
        cost = estimate_tokens(text)
        if text and used + cost <= budget_tokens and text not in hints:
            hints.append(text)
            used += cost
    return hints


def link_text(item: EvidenceItem, question: str) -> str:
    """``"France" -> singer.Country = 'France'``: the question's words and what they name."""
    r = item.entry.content_resources
    words = ", ".join(f'"{p}"' for p in _phrases(item, question)) or "found by search"
    if item.entry.type == "table":
        target = f"table {r.get('table', item.entry.name)}"
    elif item.entry.type == "column":
        target = f"column {r.get('table')}.{r.get('column')}"
    else:
        value = r.get("value")
        shown = f"'{value}'" if isinstance(value, str) else str(value)
        target = f"{r.get('table')}.{r.get('column')} = {shown}"
    return f"{words} -> {target}"


def used_knowledge(item: EvidenceItem, question: str) -> UsedKnowledge:
    """The answer's record of one knowledge entry that went into the prompt."""
    return UsedKnowledge(
        id=item.entry.id,
        type=item.entry.type,
        name=item.entry.name,
        reasons=item.reasons or ["explored"],
        spans=item.spans,
        phrases=_phrases(item, question),
        mined=_mined_trust(item.entry.metadata),
    )


def _mined_trust(metadata: Mapping[str, Any]) -> str | None:
    note = metadata.get(MINING_KEY)  # see agents.learn.mine.candidates
    trust = note.get("trust") if isinstance(note, Mapping) else None
    return str(trust) if trust else None


def _inside(span: Span, outer: Sequence[Span]) -> bool:
    return any(a <= span[0] and span[1] <= b for a, b in outer)


def _phrases(item: EvidenceItem, question: str) -> list[str]:
    return sorted({question[a:b] for a, b in item.spans})
