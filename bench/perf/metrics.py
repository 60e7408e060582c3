"""Timings of the execution metrics on large results.

Usage: ``python -m bench.perf.metrics [--rows 10000] [--seed 0]``

The gold result has ``--rows`` rows of five columns: a unique id, a name, a region (8 values), a
year (10 values) and an amount. The prediction perturbs it: some rows get one value changed,
some are dropped, some new rows are added, and the order is shuffled. The low-cardinality
columns make most row pairs share a value, the hard case for Bipartite F-β.
"""

from __future__ import annotations

import argparse
import itertools
import random
import time
from collections.abc import Callable
from typing import Any

from bench.metrics import (
    bipartite_f_beta,
    execution_accuracy,
    soft_f1,
    spider_execution_match,
)

REGIONS = ("north", "south", "east", "west", "centre", "coast", "hills", "islands")
CHANGED, DROPPED, ADDED = 0.10, 0.05, 0.05

Row = tuple[Any, ...]


def make_results(rows: int, seed: int) -> tuple[list[Row], list[Row]]:
    """A gold result and a perturbed, shuffled prediction of it."""
    rng = random.Random(seed)
    fresh = itertools.count(rows)

    def new_row(i: int) -> Row:
        amount = round(rng.uniform(0, 10_000), 2)
        return (i, f"customer {i}", rng.choice(REGIONS), rng.randint(2015, 2024), amount)

    def change_one_value(row: Row) -> Row:
        cells = list(row)
        column = rng.randrange(len(cells))
        if column == 0:
            cells[0] = next(fresh)
        elif column == 1:
            cells[1] = f"customer {next(fresh)}"
        elif column == 2:
            cells[2] = rng.choice([r for r in REGIONS if r != row[2]])
        elif column == 3:
            cells[3] = row[3] + rng.choice((-1, 1))
        else:
            cells[4] = round(row[4] + rng.uniform(1, 100), 2)
        return tuple(cells)

    gold = [new_row(i) for i in range(rows)]
    pred: list[Row] = []
    for row in gold:
        draw = rng.random()
        if draw >= DROPPED:
            pred.append(change_one_value(row) if draw < DROPPED + CHANGED else row)
    pred += [new_row(next(fresh)) for _ in range(int(rows * ADDED))]
    rng.shuffle(pred)
    return pred, gold


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="gold rows (default 10000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = parser.parse_args(argv)
    pred, gold = make_results(args.rows, args.seed)
    print(f"gold {len(gold)} rows × 5 columns, predicted {len(pred)} rows, seed {args.seed}")
    cases: list[tuple[str, Callable[[], Any]]] = [
        ("bf_beta unordered", lambda: bipartite_f_beta(pred, gold, order_relevant=False)),
        ("bf_beta ordered", lambda: bipartite_f_beta(pred, gold, order_relevant=True)),
        ("soft_f1", lambda: soft_f1(pred, gold)),
        ("ex", lambda: execution_accuracy(pred, gold)),
        ("spider_ex unordered", lambda: spider_execution_match(pred, gold, False)),
    ]
    print(f"{'metric':<20} {'seconds':>8} {'score':>8}")
    for name, fn in cases:
        seconds, value = timed(fn)
        print(f"{name:<20} {seconds:>8.3f} {float(value):>8.4f}")
    print("(the prediction is shuffled, so order-relevant scores are low by design)")


if __name__ == "__main__":
    main()
