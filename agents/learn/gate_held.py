"""The regression gate's held set: the verified questions the candidates can affect first.

The gate (:mod:`agents.learn.gate`) re-asks a held question only when the candidates change
its prompt, and a candidate changes a prompt mostly where the question says its phrase (the
string index matches a synonym, a value, a predicate's phrase; the retriever ranks it in).
A held set drawn at random rarely holds such a question, so the gate would measure nothing
relevant. :func:`held_set` therefore picks, from a pool of verified experiences:

1. **targeted** questions first: for each candidate, the questions that say one of its
   phrases (:func:`phrases_of`; "says" as the miner judges it:
   :func:`agents.learn.mine.usage.says` on lemmas), taken **round-robin** over the candidates
   (in the order of their ids), one question per candidate a turn, so that one common phrase
   does not take the whole budget and every candidate with a question saying its phrase gets
   one before any gets a second;
2. then the rest of the pool, to ``size`` questions at most.

Every list (a candidate's questions, the fill) is in the SHA-256 order of the experience ids:
a fixed pseudo-random order, so the same pool and candidates give the same held set whatever
order they come in. The pool leaves out every experience a candidate was mined from (its
``parents``, the union over every experience that gave the fact): a candidate is never judged
on the question it came from, and a question that says a phrase without having given that
fact (the phrase meant something else there) is exactly the one the candidate may break.

A candidate's phrases: its name and synonyms, the value it stands for (a value synonym) or
the string constants of its condition (a predicate); for a mined join, the names of its two
tables (the join path is added where a question brings either table in). A preference has
none: it applies by its scope, whatever the question says, so the fill covers it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agents.learn.mine.sql_facts import SqlFactsError, sql_facts
from agents.learn.mine.usage import kind_of, lemmas_of, says
from indices.normalize import Lemmatizer
from ukf import BaseUKF, ExperienceUKF

Phrase = tuple[str, ...]


@dataclass(frozen=True)
class HeldSet:
    """The held questions (the targeted ones first) and how many of them are targeted."""

    experiences: list[ExperienceUKF]
    targeted: int  # the first ``targeted`` say a candidate's phrase

    @property
    def ids(self) -> list[str]:
        return [e.id for e in self.experiences]


def sha_order(uid: str) -> str:
    """The sort key of the fixed pseudo-random order (SHA-256 of the id)."""
    return hashlib.sha256(uid.encode()).hexdigest()


def phrases_of(entry: BaseUKF, lemmatizer: Lemmatizer | None = None) -> list[Phrase]:
    """The lemmas of every phrase of ``entry`` a question may say (module docstring)."""
    r = entry.content_resources
    kind = kind_of(entry)
    texts: list[object]
    if kind == "preference":
        texts = []
    elif kind == "join":
        texts = [r.get("left_table"), r.get("right_table")]
    else:
        texts = [entry.name, *entry.synonyms, r.get("value")]
        if kind == "predicate" and isinstance(r.get("condition"), str):
            texts += _constants(r["condition"])
    phrases: list[Phrase] = []
    for text in texts:
        phrase = lemmas_of(str(text), lemmatizer) if text is not None else ()
        if phrase and phrase not in phrases:
            phrases.append(phrase)
    return phrases


def held_set(
    pool: Iterable[ExperienceUKF],
    candidates: Sequence[BaseUKF],
    size: int,
    *,
    lemmatizer: Lemmatizer | None = None,
) -> HeldSet:
    """Up to ``size`` experiences of ``pool`` none of ``candidates`` was mined from: the
    questions saying a candidate's phrase first, round-robin over the candidates, then the
    rest, each in SHA-256 order of the ids (module docstring)."""
    sources = {p for c in candidates for p in c.parents}
    unique = {e.id: e for e in pool if e.id not in sources}
    ordered = sorted(unique.values(), key=lambda e: sha_order(e.id))
    lemmas = {e.id: lemmas_of(e.question, lemmatizer) for e in ordered}
    queues = []
    for candidate in sorted(candidates, key=lambda c: (c.id, c.content_hash)):
        phrases = phrases_of(candidate, lemmatizer)
        saying = [e for e in ordered if any(says(lemmas[e.id], p) for p in phrases)]
        if saying:
            queues.append(saying)
    chosen: dict[str, ExperienceUKF] = {}
    while queues and len(chosen) < size:
        for queue in queues:
            while queue and queue[0].id in chosen:
                queue.pop(0)
            if queue and len(chosen) < size:
                first = queue.pop(0)
                chosen[first.id] = first
        queues = [q for q in queues if q]
    targeted = len(chosen)
    for experience in ordered:
        if len(chosen) >= size:
            break
        chosen.setdefault(experience.id, experience)
    return HeldSet(list(chosen.values()), targeted)


def _constants(condition: str) -> list[str]:
    """The string constants a predicate's condition compares with ("Korea" in
    ``name LIKE '%Korea %'``); numbers are left out (a digit says little)."""
    try:
        facts = sql_facts(f"SELECT 1 FROM t WHERE {condition}")
    except SqlFactsError:
        return []
    return [str(v) for p in facts.predicates for v in p.values if isinstance(v, str)]
