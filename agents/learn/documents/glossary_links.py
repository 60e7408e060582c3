"""An extracted metric named by a glossary term gets the term's other names as synonyms.

A metrics page defines "GP" by its formula; the glossary says GP stands for "gross profit".
A question says "gross profit", which matches the glossary entry but not the metric, so the
formula never reaches the prompt. :func:`with_glossary_synonyms` gives each extracted metric
or predicate whose name (or a synonym) is a glossary term, or one of the term's expansions,
the term's name and its other expansions as synonyms, and records the glossary entries it
took them from in ``content_resources["synonyms_from"]``. The glossary is what the run
extracted (this document's and the earlier ones') and what the knowledge base already holds.
"""

from __future__ import annotations

from collections.abc import Iterable

from ukf import BaseUKF

LINKED_TYPES = ("metric", "predicate")


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def glossary_index(glossary: Iterable[BaseUKF]) -> dict[str, list[BaseUKF]]:
    """Folded name or synonym → the glossary entries so named."""
    index: dict[str, list[BaseUKF]] = {}
    for entry in glossary:
        for name in {_fold(n) for n in [entry.name, *entry.synonyms] if n.strip()}:
            index.setdefault(name, []).append(entry)
    return index


def with_glossary_synonyms(
    entries: Iterable[BaseUKF], index: dict[str, list[BaseUKF]]
) -> list[BaseUKF]:
    """``entries``, each metric or predicate named by a glossary term with that term's names
    added to its synonyms (the rest unchanged)."""
    linked: list[BaseUKF] = []
    for entry in entries:
        if entry.type not in LINKED_TYPES:
            linked.append(entry)
            continue
        own = [entry.name, *entry.synonyms]
        terms = {t.id: t for n in own for t in index.get(_fold(n), [])}
        known = {_fold(n) for n in own}
        added: list[str] = []
        for term in terms.values():
            for name in [term.name, *term.synonyms]:
                if _fold(name) not in known:
                    known.add(_fold(name))
                    added.append(name)
        if not added:
            linked.append(entry)
            continue
        resources = {**entry.content_resources, "synonyms_from": sorted(terms)}
        linked.append(entry.clone(synonyms=[*entry.synonyms, *added], content_resources=resources))
    return linked
