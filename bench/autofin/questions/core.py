"""Question generation: templates x parameters from a seeded stream, each gold query verified.

`generate_questions` draws (template, profile, query time, style) tuples, lets the template fill
an `Ask`, executes the gold SQL on the SQLite database, and keeps the question when every gold
variant returns the same non-empty, NULL-free rows. It stops once it has ``count`` questions
and at least `MIN_PER_TRAIT` of each trait.
"""

from __future__ import annotations

import logging
import math
import random
import sqlite3
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tqdm import tqdm

from bench.autofin.catalog import DATABASE
from bench.autofin.profiles import profiles, user_profile
from bench.autofin.questions.slots import TRAITS, Ask
from bench.autofin.world import World
from bench.datasets import Example, make_tag

logger = logging.getLogger(__name__)

MIN_PER_TRAIT = 100
TRAIN_SHARE = 0.3
FIRST_QUERY_DAY = datetime(2024, 4, 1, tzinfo=UTC)
LAST_QUERY_DAY = datetime(2026, 1, 9, tzinfo=UTC)


@dataclass(frozen=True)
class Draft:
    """What a template writes: the question and its gold SQL (the same text for both dialects,
    unless ``postgresql`` differs). ``level`` is the template's own difficulty (0 to 2)."""

    question: str
    sql: str
    level: int = 0
    order_relevant: bool = False
    variants: tuple[str, ...] = ()
    postgresql: str | None = None


Template = Callable[[Ask], Draft | None]


def run_gold(connection: sqlite3.Connection, sql: str) -> list[tuple] | None:
    """The rows of a gold query, or None when it fails, returns nothing or returns NULLs."""
    try:
        rows = connection.execute(sql).fetchall()
    except sqlite3.Error as err:
        logger.warning("gold SQL failed (%s): %s", err, sql)
        return None
    if not rows or any(value is None for row in rows for value in row):
        return None
    return rows


def same_rows(left: Sequence[tuple], right: Sequence[tuple], *, ordered: bool) -> bool:
    """Row lists equal, floats compared with a relative tolerance of 1e-6."""
    if len(left) != len(right):
        return False
    if not ordered:
        left, right = sorted(left, key=repr), sorted(right, key=repr)
    return all(
        len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
        for a, b in zip(left, right, strict=True)
    )


def _close(x: object, y: object) -> bool:
    if isinstance(x, int | float) and isinstance(y, int | float):
        return math.isclose(float(x), float(y), rel_tol=1e-6, abs_tol=1e-6)
    return x == y


def draw_query_time(rng: random.Random) -> datetime:
    """A working-hours time between `FIRST_QUERY_DAY` and `LAST_QUERY_DAY`; four in ten fall
    before the 10th of the month, when the data-refresh rule matters."""
    days = (LAST_QUERY_DAY - FIRST_QUERY_DAY).days
    day = FIRST_QUERY_DAY + timedelta(days=rng.randrange(days + 1))
    if rng.random() < 0.4:
        day = day.replace(day=rng.randint(1, 9))
    return day.replace(hour=rng.randint(7, 19), minute=rng.choice((0, 15, 30, 45)))


def generate_questions(
    database: Path | str,
    world: World,
    templates: Sequence[tuple[str, Template, float]],
    *,
    seed: int,
    count: int = 480,
    progress: bool = True,
) -> list[Example]:
    """Questions over the SQLite file ``database``, deterministic for a seed."""
    rng = random.Random(f"autofin:{seed}:questions")
    people = profiles()
    names, functions, weights = zip(*templates, strict=True)
    examples: list[Example] = []
    seen: set[tuple[str, str]] = set()
    traits: Counter[str] = Counter()
    uri = f"{Path(database).resolve().as_uri()}?mode=ro"
    with (
        closing(sqlite3.connect(uri, uri=True)) as connection,
        tqdm(total=count, desc="questions", disable=not progress) as bar,
    ):
        for _ in range(count * 20):
            short = [t for t in TRAITS if traits[t] < MIN_PER_TRAIT]
            if len(examples) >= count and not short:
                break
            index = rng.choices(range(len(names)), weights=weights)[0]
            profile = rng.choice(people)
            terse = rng.random() < (0.75 if profile["role"] == "executive" else 0.25)
            stream = random.Random(rng.getrandbits(64))
            ask = Ask(stream, world, profile, draw_query_time(rng), terse)
            draft = functions[index](ask)
            if draft is None or (draft.question, draft.sql) in seen:
                continue
            found = ask.finish()
            if len(examples) >= count and not found & set(short):
                continue
            if not _verified(connection, draft):
                continue
            seen.add((draft.question, draft.sql))
            traits.update(found)
            examples.append(_example(len(examples) + 1, names[index], ask, draft, found, rng))
            bar.update(1)
        else:
            raise RuntimeError(f"could not write {count} questions with enough traits: {traits}")
    logger.info("wrote %d questions; traits %s", len(examples), dict(sorted(traits.items())))
    return examples


def _verified(connection: sqlite3.Connection, draft: Draft) -> bool:
    rows = run_gold(connection, draft.sql)
    if rows is None:
        return False
    for variant in draft.variants:
        other = run_gold(connection, variant)
        if other is None or not same_rows(rows, other, ordered=draft.order_relevant):
            logger.warning("gold variant disagrees: %s", variant)
            return False
    return True


def _difficulty(level: int, traits: set[str]) -> str:
    score = level + len(traits)
    return "easy" if score <= 2 else "medium" if score <= 4 else "hard"


def _example(
    number: int, template: str, ask: Ask, draft: Draft, traits: set[str], rng: random.Random
) -> Example:
    gold = [draft.sql, *draft.variants]
    postgresql = [draft.postgresql or draft.sql, *draft.variants]
    tags = [make_tag("TRAIT", t) for t in TRAITS if t in traits]
    tags += [
        make_tag("TEMPLATE", template),
        make_tag("STYLE", "terse" if ask.terse else "precise"),
        make_tag("ROLE", ask.profile["role"]),
    ]
    return Example(
        id=f"autofin-{number:04d}",
        question=draft.question,
        database=DATABASE,
        context={"query_time": ask.query_time, "user_profile": user_profile(ask.profile)},
        gold_sql=gold,
        gold_sql_by_dialect={"sqlite": gold, "postgresql": postgresql},
        order_relevant=draft.order_relevant,
        tags=tags,
        difficulty=_difficulty(draft.level, traits),
        split="train" if rng.random() < TRAIN_SHARE else "test",
        metadata={
            "template": template,
            "knowledge": list(ask.knowledge),
            "reporting_period": ask.reporting,
        },
    )
