"""Preferences: a filter a user, a workspace or a profile applies without saying so.

Unlike the other miners this one reads many experiences at once. A *scope* is who asked:

- ``user:<name>``: the experience's owner (the entry is that user's own, ``owner``, with the
  ``always`` trigger), or the ``user`` of its profile (a ``user_profile_match`` trigger);
- ``workspace:<name>``: the experience's workspace (the entry belongs to the workspace, with
  a ``workspace_in`` trigger);
- ``profile:<key>=<value>``: every asker whose profile has that value ("caliber" = "B"),
  kept only where the habitual value *is* the profile's value: AutoFin's "caliber = 'B' for
  users whose profile says caliber B" (a ``user_profile_match`` trigger on the key).

For each scope and column name, the questions reading a table with that column are counted,
and among them those whose SQL filters ``column = 'value'`` while the question does not name
the value (not verbatim, not as initials, not through a known phrase of that value). A value
filtered so in at least ``min_share`` of them, and at least ``min_count`` times, becomes an
intent rule "unless the question names another <column>, filter <column> = '<value>'",
scoped as above (the ``variant`` is the scope, so scopes never collide in the merge), with
every supporting experience as a parent. A value the column does not hold is dropped, and so
is a filter one of the knowledge base's own rules adds for every supporter
(:func:`authored_filters`: the chain put it in the logged SQL, no asker did). The
triggers make the retriever treat a rule as decisive (it is shown before the schema), as the
knowledge pack's default-currency and default-caliber rules are.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agents.learn.mine import entries
from agents.learn.mine.align import QuestionView
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.sql_facts import SqlFactsError, sql_facts
from agents.sql.default_filters import filter_of
from indices.normalize import Lemmatizer
from indices.string import StringIndex
from kb.store import KnowledgeStore
from kb.target.database import Database
from kb.target.sql_guard import sqlglot_dialect
from ukf import BaseUKF, ExperienceUKF

MIN_SHARE = 0.6
MIN_COUNT = 3
Scope = tuple[str, str]  # (label, database)
Habit = tuple[str, str, str, str]  # (label, database, column, value)


@dataclass
class PreferenceMining:
    """Preference rules found, drops by reason, and how many scopes were examined."""

    entries: list[BaseUKF] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    scopes: int = 0


@dataclass
class _Tally:
    readers: dict[tuple[Scope, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    habits: dict[Habit, list[ExperienceUKF]] = field(default_factory=lambda: defaultdict(list))
    tables: dict[Habit, str] = field(default_factory=dict)


def mine_preferences(
    store: KnowledgeStore,
    experiences: Iterable[ExperienceUKF],
    *,
    job_id: str,
    miner: str = "labeled",
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    targets: Mapping[str, Database] | None = None,
    min_share: float = MIN_SHARE,
    min_count: int = MIN_COUNT,
) -> PreferenceMining:
    """Habitual unnamed filters of ``experiences`` as scoped preference rules (see the module
    docstring); the entries are candidates for :func:`kb.merge.merge_mined`."""
    views: dict[str, SchemaView] = {}
    tally = _Tally()
    for experience in experiences:
        database = next(iter(experience.tag_values("DATABASE")), "")
        if not experience.sql or not database or not experience.trusted:
            continue
        if database not in views:
            views[database] = SchemaView(store, database, target=(targets or {}).get(database))
        _count(experience, database, views[database], store, strings, lemmatizer, tally)
    out = PreferenceMining(scopes=len({scope for scope, _ in tally.readers}))
    authored = authored_filters(store)
    for habit, supporters in sorted(tally.habits.items()):
        label, database, column, value = habit
        readers = tally.readers[((label, database), column)]
        if len(supporters) < min_count or len(supporters) < min_share * len(readers):
            continue
        if label.startswith("profile:") and label.split("=", 1)[1].casefold() != value.casefold():
            continue  # a profile's habit counts only where the profile says the value
        authors = authored.get((database, column, value.casefold()), [])
        if any(all(a.triggered(s.context) for s in supporters) for a in authors):
            out.dropped["authored_filter"] += 1  # the chain added it: no habit of the askers
            continue
        view = views[database]
        owner = view.column(tally.tables[habit], column)
        if owner is None or view.value_check(owner, value) == "missing":
            out.dropped["unknown_value"] += 1
            continue
        out.entries.append(_rule(habit, supporters, len(readers), owner, job_id, miner))
    return out


def _count(
    experience: ExperienceUKF,
    database: str,
    view: SchemaView,
    store: KnowledgeStore,
    strings: StringIndex | None,
    lemmatizer: Lemmatizer | None,
    tally: _Tally,
) -> None:
    dialect = sqlglot_dialect(experience.content_resources.get("dialect") or "sqlite")
    try:
        facts = sql_facts(experience.sql or "", dialect)
    except SqlFactsError:
        return
    scopes = [(label, database) for label in scopes_of(experience)]
    if not scopes:
        return
    columns = {
        c.content_resources["column"].casefold(): table
        for table in facts.tables
        for (t, _), c in view.columns.items()
        if t == table.casefold()
    }
    for scope in scopes:
        for column in columns:
            tally.readers[(scope, column)].add(experience.id)
    question = QuestionView(experience.question, strings, lemmatizer)
    named = _named_values(question, store)
    for pred in facts.predicates:
        if pred.op != "=" or not pred.is_text or len(pred.values) != 1:
            continue
        column, value = pred.column.casefold(), str(pred.values[0])
        if column not in columns or _names(question, named, column, value):
            continue
        for label, _ in scopes:
            habit = (label, database, column, value)
            if experience.id not in {e.id for e in tally.habits[habit]}:
                tally.habits[habit].append(experience)
                tally.tables[habit] = pred.table or columns[column]


def authored_filters(store: KnowledgeStore) -> dict[tuple[str, str, str], list[BaseUKF]]:
    """The knowledge base's own rules and metrics that carry a default filter
    (``content_resources.default_filter``, not a mined preference), by (database, column,
    value) lower-cased: the chain adds such a filter to every query that lacks it where the
    entry's triggers accept the asker (:mod:`agents.sql.default_filters`), so those answers
    hold it whether or not the asker meant it. A habit counts as one only where no such
    entry accepted every one of its supporters' contexts."""
    found: dict[tuple[str, str, str], list[BaseUKF]] = defaultdict(list)
    for kind in ("rule", "metric"):
        for entry in store.iterate(type=kind):
            if "default_filter" not in entry.content_resources:
                continue
            default = filter_of(entry)
            if default is None or default.op != "=" or default.breakdown:
                continue  # a habit is an equality on every query
            for database in entry.tag_values("DATABASE"):
                key = (database, default.column.casefold(), str(default.value).casefold())
                found[key].append(entry)
    return found


def scopes_of(experience: ExperienceUKF) -> list[str]:
    """Who asked ``experience``: its user, its workspace, and its profile's values."""
    profile = experience.context.user_profile
    labels: list[str] = []
    user = experience.owner or profile.get("user")
    if user:
        labels.append(f"user:{user}")
    if experience.workspace:
        labels.append(f"workspace:{experience.workspace}")
    for key, value in sorted(profile.items()):
        if key != "user" and isinstance(value, str | int) and not isinstance(value, bool):
            labels.append(f"profile:{key}={value}")
    return labels


def _named_values(question: QuestionView, store: KnowledgeStore) -> set[tuple[str, str]]:
    """(column, value) pairs the question's known phrases stand for (synonyms, enums)."""
    ids = [uid for match in question.known for uid in match.ukf_ids]
    named: set[tuple[str, str]] = set()
    for entry in store.get_many(ids).values():
        r = entry.content_resources
        if r.get("column") and r.get("value") is not None:
            named.add((str(r["column"]).casefold(), str(r["value"]).casefold()))
    return named


def _names(question: QuestionView, named: set[tuple[str, str]], column: str, value: str) -> bool:
    """Whether the question names ``value`` (short codes only as a whole word, same case:
    "caliber A", not the article "a")."""
    if (column, value.casefold()) in named:
        return True
    if len(value) <= 2:
        return re.search(rf"(?<!\w){re.escape(value)}(?!\w)", question.question) is not None
    return question.find_value(value) is not None or question.find_initials(value) is not None


def _rule(
    habit: Habit,
    supporters: list[ExperienceUKF],
    readers: int,
    column: BaseUKF,
    job_id: str,
    miner: str,
) -> BaseUKF:
    label, database, _, value = habit
    name = column.content_resources["column"]
    kind, _, who = label.partition(":")
    first, *others = supporters
    prov = entries.Provenance(job_id, miner, first, database, others=others)
    owner = workspace = None
    triggers: dict[str, dict[str, Any]] = {}
    if kind == "user" and first.owner == who:
        owner = who  # visible to that user only; the trigger puts it among the decisive rules
        triggers = {"always": {}}
    elif kind == "user":
        triggers = {"user_profile_match": {"user": who}}
    elif kind == "workspace":
        workspace = who
        triggers = {"workspace_in": {"workspaces": [who]}}
    else:
        key, _, wanted = who.partition("=")
        triggers = {"user_profile_match": {key: wanted}}
    condition = f"{name} = '{value}'"
    return entries.preference(
        f"default {name} {value}",
        f"Unless the question names another {name}, filter {condition}.",
        {"column": name, "value": value, "condition": condition, "scope": label},
        prov,
        scope=label,
        owner=owner,
        workspace=workspace,
        triggers=triggers,
        description=(
            f"{len(supporters)} of {readers} questions of {label} on tables with {name} "
            f"filter {condition} without naming it."
        ),
    )
