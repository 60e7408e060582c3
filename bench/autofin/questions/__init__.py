"""AutoFin's labeled questions: templates x parameters, each tagged with the RubikSQL traits it
exercises (implicit intent, private domain knowledge, wide tables, context sensitivity).

`TEMPLATES` lists every template with its weight; `build_questions` runs them against a built
SQLite database (see `core.generate_questions`).
"""

from __future__ import annotations

from pathlib import Path

from bench.autofin.questions import brand, lookup, ranking
from bench.autofin.questions.core import Draft, Template, generate_questions, run_gold, same_rows
from bench.autofin.questions.slots import TRAITS
from bench.autofin.world import World
from bench.datasets import Example

TEMPLATES: tuple[tuple[str, Template, float], ...] = (
    ("brand_measure", brand.brand_measure, 3.0),
    ("brand_ratio", brand.brand_ratio, 1.5),
    ("brand_yoy", brand.brand_yoy, 1.5),
    ("brand_mom", brand.brand_mom, 1.2),
    ("performance", brand.performance, 1.0),
    ("caliber_gap", brand.caliber_gap, 0.8),
    ("local_currency", brand.local_currency, 1.0),
    ("monthly_trend", brand.monthly_trend, 0.8),
    ("nev_share", brand.nev_share, 0.6),
    ("region_rank", ranking.region_rank, 1.5),
    ("region_growth", ranking.region_growth, 0.7),
    ("region_share", ranking.region_share, 0.8),
    ("top_models", ranking.top_models, 1.0),
    ("area_best", ranking.area_best, 1.0),
    ("brand_compare", ranking.brand_compare, 1.2),
    ("model_nickname", lookup.model_nickname, 1.5),
    ("customer_revenue", lookup.customer_revenue, 1.0),
    ("retail_revenue", lookup.retail_revenue, 0.8),
    ("budget", lookup.budget, 1.0),
    ("ledger", lookup.ledger, 1.0),
)


def build_questions(
    database: Path | str, world: World, *, seed: int, count: int = 480, progress: bool = True
) -> list[Example]:
    """The benchmark questions over the SQLite file ``database`` built from ``world``."""
    return generate_questions(database, world, TEMPLATES, seed=seed, count=count, progress=progress)


__all__ = [
    "TEMPLATES",
    "TRAITS",
    "Draft",
    "Template",
    "build_questions",
    "generate_questions",
    "run_gold",
    "same_rows",
]
