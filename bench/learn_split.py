"""``python -m bench run --learn-split SPLIT``: the questions revealed to a system before it
answers any, and how it learns them.

- Labeled (the default): each revealed question comes with its gold SQL (a labeled
  experience, shown as a worked example); with ``--mine-every`` they are then mined once
  (a ``learn-split`` round of ``mining.jsonl``).
- ``--learn-unlabeled``: the questions come *without* their SQL, as an unlabeled stream's
  would: each is stored as an unlabeled experience with no SQL, and the ``learn-split``
  mining round (``--mine-every`` is required) asks each once with the vote of
  ``--mine-vote-samples`` candidates and mines only those the vote agrees on, as trust
  ``unlabeled`` (:func:`agents.learn.mine.unlabeled.mine_unlabeled`). The gold SQL is never
  read.

Which questions: the named split's (the first ``--examples-per-db`` of each database when
given), or with ``rest`` every question of the asked databases that is not asked; then the
first ``--learn-limit`` of them (source order; AutoFin's is seeded), to size a run.
What was revealed (and, unlabeled, how many the vote kept) is recorded in the round's line
of ``mining.jsonl`` (``revealed``) and, with ``--learn-unlabeled`` or ``--learn-limit``, in
``run.json`` (``learned``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.cli_parser import REST_SPLIT
from bench.datasets import Dataset, Example
from bench.run import MiningSystem, note_learned, record_mining
from bench.synthesis import first_per_database
from bench.systems import LearningSystem, Prediction, System


def check_learn_options(args: argparse.Namespace) -> None:
    """Refuse combinations of the learn-split options that cannot do what they say."""
    if (args.learn_unlabeled or args.learn_limit is not None) and not args.learn_split:
        raise ValueError("--learn-unlabeled and --learn-limit need --learn-split")
    if args.learn_limit is not None and args.learn_limit < 0:
        raise ValueError(f"--learn-limit must be at least 0, got {args.learn_limit}")
    if args.learn_unlabeled and not args.mine_every:
        raise ValueError(
            "--learn-unlabeled questions teach only through the vote's mining: add --mine-every"
        )
    if args.learn_unlabeled and args.mine_gate and args.stream != "labeled":
        raise ValueError(
            "--mine-gate replays labeled questions; --learn-unlabeled reveals none (add"
            " --stream labeled, or leave the gate out)"
        )
    if args.learn_unlabeled and (args.synthesize or args.cot):
        raise ValueError(
            "--synthesize and --cot start from labeled examples; --learn-unlabeled reveals none"
        )


def revealed_examples(full: Dataset, args: argparse.Namespace) -> list[Example]:
    """The examples ``--learn-split`` reveals of a named split (the first
    ``--examples-per-db`` of each database, then the first ``--learn-limit``); none for
    ``rest``, known once the asked sample is drawn (:func:`rest_of`)."""
    if not args.learn_split:
        return []
    if args.learn_split == REST_SPLIT:
        if args.examples_per_db is not None:
            raise ValueError(
                f"--learn-split {REST_SPLIT} reveals every question not asked:"
                " --examples-per-db needs a named split"
            )
        return []
    revealed = full.filter(split=args.learn_split).examples
    if args.examples_per_db is not None:
        revealed = first_per_database(revealed, args.examples_per_db)
    return _first(revealed, getattr(args, "learn_limit", None))


def rest_of(full: Dataset, asked: Dataset, limit: int | None = None) -> list[Example]:
    """``--learn-split rest``: every question of the databases asked about that is not
    asked itself (per-database streams of the other questions, e.g. Spider dev), the first
    ``limit`` of them when given. A paraphrase of an asked question, one whose gold SQL is
    the asked one's (Spider dev pairs most questions so), is not revealed: it would hand the
    asked question its answer."""
    asked_ids = {e.id for e in asked.examples}
    databases = {e.database for e in asked.examples}
    answers = {(e.database, _plain_sql(sql)) for e in asked.examples for sql in e.gold_sql}
    rest = [
        e
        for e in full.examples
        if e.database in databases
        and e.id not in asked_ids
        and not any((e.database, _plain_sql(sql)) in answers for sql in e.gold_sql)
    ]
    return _first(rest, limit)


def _plain_sql(sql: str) -> str:
    """``sql`` compared as text: lower case, one space between words, no final ``;``."""
    return " ".join(sql.lower().split()).rstrip("; ")


def check_unasked(revealed: list[Example], asked: Dataset, args: argparse.Namespace) -> None:
    """Refuse to reveal the gold SQL of a question that is then asked (its answer would be
    in the store): a named split that overlaps the asked sample (``--split`` left out, or the
    same split). Unlabeled questions reveal no SQL and may overlap."""
    if args.learn_unlabeled:
        return
    both = sorted({e.id for e in revealed} & {e.id for e in asked.examples})
    if both:
        raise ValueError(
            f"--learn-split {args.learn_split} reveals the gold SQL of {len(both)} asked"
            f" question(s) ({', '.join(both[:5])}{', ...' if len(both) > 5 else ''}): ask"
            f" another split (--split), or reveal the questions not asked (--learn-split"
            f" {REST_SPLIT})"
        )


def learn_split(
    system: System, revealed: list[Example], args: argparse.Namespace, out_dir: Path
) -> dict[str, Any]:
    """Reveal ``revealed`` to ``system`` (with their gold SQL, or without it:
    ``--learn-unlabeled``); with ``--mine-every`` mine them once (a ``learn-split`` round).
    Returns what was learned (also written to the run's records, module docstring)."""
    if not isinstance(system, LearningSystem):
        raise ValueError(f"system {args.system!r} does not learn (--learn-split)")
    unlabeled = bool(args.learn_unlabeled)
    reveal_question = getattr(system, "learn_unlabeled", None)
    if unlabeled and (reveal_question is None or not isinstance(system, MiningSystem)):
        raise ValueError(f"system {args.system!r} does not learn unlabeled questions")
    kind = "unlabeled" if unlabeled else "labeled"
    for example in tqdm(revealed, desc=f"learning {args.learn_split} ({kind})", unit="q"):
        if unlabeled:
            reveal_question(example)  # the question alone: its gold SQL is never read
        else:
            system.observe(example, Prediction(), True)
    learned: dict[str, Any] = {
        "revealed": {
            "split": args.learn_split,
            "questions": len(revealed),
            "gold_sql": not unlabeled,
            "limit": args.learn_limit,
        }
    }
    if args.mine_every and isinstance(system, MiningSystem):
        record = system.mine(phase="learn-split", after_question=0)
        record_mining(out_dir, record, {"revealed": learned["revealed"]})
        if record is not None:
            learned.update(_mined(record.to_dict()))
    if unlabeled or args.learn_limit is not None:  # only then: earlier manifests stay as they were
        note_learned(out_dir, learned)
    if unlabeled:
        vote = learned.get("vote") or {}
        print(
            f"learned {len(revealed)} {args.learn_split} questions without SQL: the vote kept"
            f" {vote.get('kept', 0)}, refused {vote.get('refused', 0)}"
            f" ({learned.get('activated', 0)} entries activated)"
        )
    return learned


def _mined(round_: dict[str, Any]) -> dict[str, Any]:
    """What a learn-split mining round gave, for ``run.json``."""
    mined: dict[str, Any] = {
        "candidates": round_.get("inserted", 0),
        "activated": round_.get("activated", 0),
        "rejected": round_.get("rejected", 0),
    }
    vote = round_.get("vote")
    if vote:
        mined["vote"] = {k: vote.get(k, 0) for k in ("asked", "remembered", "kept", "refused")}
        mined["vote"]["refused_by"] = vote.get("refused_by", {})
    return mined


def _first(examples: list[Example], limit: int | None) -> list[Example]:
    return examples if limit is None else examples[:limit]
