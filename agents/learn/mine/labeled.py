"""``mine_labeled``: labeled experiences → candidate knowledge, merged into the store.

For each labeled (or verified) experience, :func:`agents.learn.mine.extract.mine_experience`
reads its SQL and pairs the facts with the question's phrases, checked against the profiled
schema of its database (:class:`SchemaView`, one per database). Every entry mined goes
through :func:`kb.merge.merge_mined` as a candidate (inactive, see
:mod:`agents.learn.mine.candidates`): re-mining the same experiences merges into the
candidates already there and inserts nothing; mined facts that disagree in one scope are
dropped, and facts of different scopes (workspace, user) are kept apart. Query templates
(:mod:`agents.learn.mine.templates`) are mined over every labeled experience of the
databases mined, since a template needs several questions of one shape. The
:class:`MiningReport` counts everything: entries by kind, drops by reason, skipped
experiences with their reasons, merge decisions.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agents.learn.mine.evidence import Evidence, screen
from agents.learn.mine.extract import mine_experience
from agents.learn.mine.pairer import Pairer
from agents.learn.mine.preferences import mine_preferences
from agents.learn.mine.schema_view import SchemaView
from agents.learn.mine.templates import MIN_SUPPORT, mine_templates
from agents.learn.mine.usage import kind_of
from indices.normalize import Lemmatizer
from indices.string import StringIndex
from kb.merge import merge_mined
from kb.store import KnowledgeStore
from kb.target.database import Database
from ukf import BaseUKF, ExperienceUKF

MINER = "labeled"
Progress = Callable[[int, int], None]


@dataclass
class MiningReport:
    """What one mining run did (JSON-ready through :meth:`to_dict`)."""

    job_id: str
    miner: str = MINER
    experiences: int = 0
    mined_experiences: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    mined: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    known: int = 0
    unpaired: int = 0
    unchecked_values: int = 0
    merge: dict[str, int] = field(default_factory=dict)
    candidate_ids: list[str] = field(default_factory=list)
    pairer_calls: int = 0
    seconds: float = 0.0
    store_version: int | None = None
    vote: dict[str, Any] | None = None
    """For unlabeled mining: what the vote asked, kept and refused (see ``unlabeled``)."""

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["mined"], data["dropped"] = dict(self.mined), dict(self.dropped)
        return data


def labeled_experiences(
    store: KnowledgeStore, *, since: int | None = None, database: str | None = None
) -> list[ExperienceUKF]:
    """Active labeled or verified experiences (written after store version ``since``)."""
    tags = {"DATABASE": database} if database else None
    found = [
        e
        for e in store.iterate(type="experience", tags=tags)
        if isinstance(e, ExperienceUKF) and e.trusted and e.sql
    ]
    if since is not None:
        recent = set(store.changes_since(since))
        found = [e for e in found if e.id in recent]
    return found


def mine_labeled(
    store: KnowledgeStore,
    experiences: Iterable[ExperienceUKF],
    *,
    job_id: str | None = None,
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    pairer: Pairer | None = None,
    targets: Mapping[str, Database] | None = None,
    apply: bool = True,
    rerun: bool = False,
    progress: Progress | None = None,
    habits_over: Iterable[ExperienceUKF] | None = None,
    template_support: int = MIN_SUPPORT,
) -> MiningReport:
    """Mine ``experiences`` into ``store`` as candidates; report what happened.

    Args:
        store: the knowledge store holding the profiled schema; receives the candidates.
        experiences: labeled experiences (others are skipped and reported).
        job_id: recorded in every entry's provenance (default: a fresh id).
        strings: the string index (known phrases are not learned again); built from the
            store when None.
        lemmatizer: the lemmatiser the string index uses.
        pairer: pairs phrases the deterministic alignment leaves (None: they stay unpaired).
        targets: database name → read-only target, to check values not profiled as enums.
        apply: False for a dry run (the report without writing).
        rerun: run each experience's SQL read-only on its target first (one row); one that
            fails there (the schema changed) is skipped with the database's error.
        progress: called with (done, total) after each experience.
        habits_over: the labeled experiences preferences are counted over
            (:func:`agents.learn.mine.preferences.mine_preferences`: a habit is a share of
            a scope's questions, so an incremental run passes the whole history; default
            the experiences mined here).
        template_support: the fewest labeled experiences sharing one slotted SQL that make
            a query template (:func:`agents.learn.mine.templates.mine_templates`, over these
            experiences and every labeled one of their databases); 0: no templates.
    """
    report = MiningReport(job_id or uuid.uuid4().hex[:12])
    return mine_into(
        store,
        [(e, _unminable(e)) for e in experiences],
        report,
        strings=strings,
        lemmatizer=lemmatizer,
        pairer=pairer,
        targets=targets,
        apply=apply,
        rerun=rerun,
        progress=progress,
        habits=True,
        habits_over=habits_over,
        template_support=template_support,
    )


def mine_into(
    store: KnowledgeStore,
    todo: Sequence[tuple[ExperienceUKF, str | None]],
    report: MiningReport,
    *,
    strings: StringIndex | None = None,
    lemmatizer: Lemmatizer | None = None,
    pairer: Pairer | None = None,
    targets: Mapping[str, Database] | None = None,
    apply: bool = True,
    rerun: bool = False,
    progress: Progress | None = None,
    habits: bool = False,
    habits_over: Iterable[ExperienceUKF] | None = None,
    template_support: int = 0,
) -> MiningReport:
    """Mine each ``(experience, reason)`` of ``todo`` whose reason is None (the others are
    skipped with it) as ``report.miner``, merge the candidates, fill ``report``; with
    ``habits``, also the preferences of ``habits_over`` (default: the experiences mined);
    with ``template_support`` (> 0), also the query templates of the experiences mined and the
    labeled history of their databases."""
    started = time.perf_counter()
    strings = strings if strings is not None else StringIndex.from_store(store, lemmatizer)
    views: dict[str, SchemaView] = {}
    mined: list[BaseUKF] = []
    minable: list[ExperienceUKF] = []
    calls_before = pairer.calls if pairer is not None else 0
    for done, (experience, reason) in enumerate(todo, 1):
        report.experiences += 1
        database = next(iter(experience.tag_values("DATABASE")), "")
        if reason is None and database not in views:
            views[database] = SchemaView(store, database, target=(targets or {}).get(database))
            if not views[database].profiled:
                reason = f"database {database!r} is not profiled"
        if reason is None and rerun:
            reason = _fails_on(views[database].target, experience)
        if reason is None:
            result = mine_experience(
                experience,
                views[database],
                job_id=report.job_id,
                miner=report.miner,
                strings=strings,
                lemmatizer=lemmatizer,
                pairer=pairer,
            )
            reason = result.skipped
            report.dropped.update(result.dropped)
            report.known += result.known
            report.unpaired += result.unpaired
            report.unchecked_values += result.unchecked_values
            mined += result.entries
        if reason is not None:
            report.skipped.append({"experience_id": experience.id, "reason": reason})
        else:
            report.mined_experiences += 1
            minable.append(experience)
        if progress is not None:
            progress(done, len(todo))
    history = [
        e for db in views if views[db].profiled for e in labeled_experiences(store, database=db)
    ]
    kept, refused = screen(mined, Evidence([*minable, *history], views, lemmatizer))
    report.dropped.update(refused)
    mined = kept
    if habits:
        found = mine_preferences(
            store,
            minable if habits_over is None else habits_over,
            job_id=report.job_id,
            miner=report.miner,
            strings=strings,
            lemmatizer=lemmatizer,
            targets=targets,
        )
        mined += found.entries
        report.dropped.update(found.dropped)
    if template_support:
        mined += mine_templates(
            minable,
            job_id=report.job_id,
            miner=report.miner,
            min_support=template_support,
            history=history,
        )
    report.mined.update(kind_of(e) for e in mined)
    merged = merge_mined(store, _with_all_parents(mined), apply=apply, include_inactive=True)
    report.merge = merged.counts()
    report.candidate_ids = [d.ukf_id for d in merged.of("inserted")]
    report.store_version = merged.version
    report.pairer_calls = (pairer.calls if pairer is not None else 0) - calls_before
    report.seconds = round(report.seconds + time.perf_counter() - started, 3)
    return report


def _with_all_parents(mined: list[BaseUKF]) -> list[BaseUKF]:
    """One entry per id, its parents the union over every experience that gave it."""
    by_id: dict[str, BaseUKF] = {}
    for entry in mined:
        first = by_id.get(entry.id)
        if first is None:
            by_id[entry.id] = entry
        elif first.content_hash == entry.content_hash:
            by_id[entry.id] = first.clone(parents=[*first.parents, *entry.parents])
        else:
            by_id.setdefault(f"{entry.id}:{entry.content_hash}", entry)  # a conflict: merge decides
    return list(by_id.values())


def _fails_on(target: Database | None, experience: ExperienceUKF) -> str | None:
    if target is None or not experience.sql:
        return None
    results = target.execute(experience.sql, max_rows=1)
    return None if results.error is None else f"SQL no longer runs: {results.error}"


def _unminable(experience: ExperienceUKF) -> str | None:
    if not experience.trusted:
        return "not labeled"
    if not experience.sql:
        return "no SQL"
    if not experience.tag_values("DATABASE"):
        return "no [DATABASE:...] tag"
    return None
