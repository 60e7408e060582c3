"""The model-free pass over a document's structured sections: rule lists and metric sections.

Business documents often state their rules and metrics in a fixed shape that needs no model
to read, and that a small model reads worse than a parser (the 1.5B gave 6 of AutoFin's 24
rules and 4 of its 16 metrics from the same pages):

- **a rule list**: list items ``Name (kind): text``, the kind one of the rule kinds
  (``temporal``, ``validity``, ``intent``, ``general``), or ``Name: text`` under a heading
  that says rules, policies, conventions or guidelines (a name of at most
  :data:`MAX_NAME_WORDS` words). Its trigger is read from the text: a day of the month
  ("before the 10th", "from the 10th on") for a temporal rule, and a user profile field
  ("users in region HQ", "the user's profile says caliber A") whose value is a stored value
  of a column named after that field;
- **a metric section**: under a heading that says metrics, KPIs or measures, a section
  whose first paragraph is one code span is a metric named by the section's own heading,
  that span its formula; an ``Also: a, b`` paragraph gives its aliases, the other
  paragraphs its description.

Each becomes the item the model would have written (:mod:`.extractor`'s answer shape), so the
same builder checks it against the schema (:func:`.build.build_entries`: the formula's
columns, placeholders and other metrics, a filter's values). A section all of whose blocks
this pass read is *covered*: with ``skip_covered_tables`` the model is not asked about it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, get_args

from agents.learn.mine.schema_view import SchemaView
from kb.documents import Block, Document, Section
from ukf.types.semantics import RuleKind

RULE_KINDS: tuple[str, ...] = get_args(RuleKind)
MAX_NAME_WORDS = 8
_KINDED = re.compile(
    r"^(?P<name>.{2,100}?)\s*\((?P<kind>" + "|".join(RULE_KINDS) + r")\)\s*:\s*(?P<text>\S.*)$",
    re.IGNORECASE | re.DOTALL,
)
_NAMED = re.compile(r"^(?P<name>[^:]{2,80}):\s*(?P<text>\S.{9,})$", re.DOTALL)
_RULES_HEADING = re.compile(r"\b(?:rules?|polic(?:y|ies)|conventions?|guidelines?)\b", re.I)
_METRICS_HEADING = re.compile(r"\b(?:metrics?|kpis?|measures?)\b", re.I)
_CODE = re.compile(r"^`([^`]+)`\.?$")
_ALSO = re.compile(
    r"^(?:also(?: called| said| known as)?|aliases?|synonyms?)\s*:\s*(?P<words>.+?)\.?$",
    re.IGNORECASE | re.DOTALL,
)
_DAY = re.compile(
    r"\b(?:before|until|up to|from|after|on or after|since)\s+the\s+\d{1,2}(?:st|nd|rd|th)?\b",
    re.IGNORECASE,
)
_PROFILE = (
    re.compile(
        r"\busers?\s+(?:in|of|from)\s+(?:the\s+)?(?P<field>region|department|country|team|"
        r"division|unit)\s+'?(?P<value>[A-Za-z0-9_&-]+)'?",
        re.IGNORECASE,
    ),
    re.compile(
        r"\bprofile\s+(?:says|has|is|shows|sets)\s+(?P<field>[a-z_]+)\s+'?(?P<value>[A-Za-z0-9_-]+)'?",
        re.IGNORECASE,
    ),
)
Items = dict[str, list[dict[str, Any]]]


@dataclass
class StructuredPass:
    """The items of a document's rule lists and metric sections, per section locator."""

    sections: list[tuple[str, Items]] = field(default_factory=list)
    covered_sections: set[int] = field(default_factory=set)
    metric_names: set[str] = field(default_factory=set)


def structured_pass(document: Document, view: SchemaView) -> StructuredPass:
    """The items the structured sections of ``document`` state (see the module docstring)."""
    done = StructuredPass()
    for index, section in enumerate(document.sections):
        items: Items = {"rules": [], "metrics": []}
        read = 0
        for block in section.blocks:
            if block.kind == "list":
                rules = [_rule_item(row[0], section, view) for row in block.rows if row]
                found = [r for r in rules if r is not None]
                items["rules"] += found
                read += len(found) == len(rules) and bool(rules)
        metric = _metric_item(section)
        if metric is not None:
            items["metrics"].append(metric)
            done.metric_names.update([metric["name"], *metric["aliases"]])
            read = len(section.blocks)
        if items["rules"] or items["metrics"]:
            done.sections.append((section.locator, items))
            if section.blocks and read == len(section.blocks):
                done.covered_sections.add(index)
    return done


def _rule_item(text: str, section: Section, view: SchemaView) -> dict[str, Any] | None:
    """A list item as a rule item (None: not a rule's shape)."""
    text = " ".join(text.split())
    match = _KINDED.match(text)
    kind = match.group("kind").lower() if match else "general"
    if match is None:
        named = _NAMED.match(text)
        if named is None or not _RULES_HEADING.search(" ".join(section.heading)):
            return None
        match = named
    name, body = match.group("name").strip(" *"), match.group("text").strip()
    if len(name.split()) > MAX_NAME_WORDS:
        return None
    item: dict[str, Any] = {"name": name, "rule": body, "kind": kind}
    day = _DAY.search(body) if kind == "temporal" else None
    if day:
        item["time"] = day.group(0)
    profile = _profile(body, view)
    if profile:
        item["profile"] = profile
    return item


def _profile(text: str, view: SchemaView) -> dict[str, str]:
    """The user profile fields the rule's text conditions on, each value a stored value of
    a column named after its field (``region`` → ``region_code``'s 'HQ')."""
    found: dict[str, str] = {}
    for pattern in _PROFILE:
        for match in pattern.finditer(text):
            field_name, value = match.group("field").casefold(), match.group("value")
            stored = _stored_value(view, field_name, value)
            if stored is not None:
                found.setdefault(field_name, stored)
    return found


def _stored_value(view: SchemaView, field_name: str, value: str) -> str | None:
    for (_table, column), values in view.enums.items():
        if field_name in column.casefold():
            entry = values.get(value.casefold())
            if entry is not None:
                return str(entry.content_resources.get("value"))
    return None


def _metric_item(section: Section) -> dict[str, Any] | None:
    """A metric section as a metric item (None: no formula paragraph first)."""
    texts = [b for b in section.blocks if b.kind == "text"]
    if not section.heading or not texts or section.blocks[0] is not texts[0]:
        return None
    code = _CODE.match(texts[0].text.strip())
    if code is None:
        return None
    if not _METRICS_HEADING.search(" ".join(section.heading[:-1])):
        return None  # a code span under a heading that does not say metrics: not a catalog
    aliases: list[str] = []
    description: list[str] = []
    for block in texts[1:]:
        also = _ALSO.match(block.text.strip())
        if also:
            aliases += [w.strip() for w in re.split(r"[,;]", also.group("words")) if w.strip()]
        else:
            description.append(_plain(block))
    return {
        "name": section.heading[-1].strip(),
        "formula": code.group(1).strip(),
        "aliases": aliases,
        "description": " ".join(description)[:300],
    }


def _plain(block: Block) -> str:
    return " ".join(block.text.split())
