"""AutoFin: a seeded enterprise-finance database of a car maker, with its knowledge pack and
labeled questions, modelled on RubikBench (RubikSQL paper). It is both a benchmark and the demo
database.

``python -m bench.autofin --out DIR [--seed N] [--pg-url URL]`` writes ``DIR/autofin.sqlite``,
``DIR/planted.json``, ``DIR/knowledge/*.md``, ``DIR/knowledge.jsonl`` (UKF),
``DIR/profiles.json``, ``DIR/questions.jsonl`` (+ ``train.jsonl`` / ``test.jsonl``) and
``DIR/manifest.json``.

Modules, in build order: `catalog` (fixed world) → `world` (seeded lines, FX) → `amounts`
(monthly series, with the patterns of `plants`) → `income`, `consolidated`, `dimensions`
(tables, laid out by `schema`) → `writer` (SQLite, PostgreSQL) → `planted` (the planted
patterns measured) → `glossary`, `rules`, `docs`, `knowledge` (the pack) → `profiles` →
`questions` (templates, verified gold SQL) → `pipeline` (all of it). `longform` and
`longform_score`: analysis questions on the planted patterns and their scorer.
"""

from bench.autofin.pipeline import Summary, generate

__all__ = ["Summary", "generate"]
