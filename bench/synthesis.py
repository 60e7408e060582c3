"""Query synthesis in the benchmark (issue 23): few human examples, then synthetic pairs.

``python -m bench run ... --learn-split train --synthesize N`` reveals the learn split's
questions with their gold SQL (labeled experiences), then synthesizes up to ``N`` verified
pairs from them (:mod:`agents.learn.synth`, spread evenly over the databases of the
questions answered) before those are answered; ``--examples-per-db K`` reveals only the
first ``K`` examples of each database (source order), and when the learn split is also the
answered one, those ``K`` are left out of the answered questions. Spider's "3 human
examples + synthesis vs the 3 alone":

    python -m bench run --dataset spider_dev --system almanac --learn-split dev --split dev
        --examples-per-db 3 --stratify 100 --out bench/out/spider-3
    (the same with --synthesize 200 and another --out; then
     python -m bench compare bench/out/spider-3 bench/out/spider-3-synth)

``--synthesize-transforms join,group,decompose`` makes only those variants (on Spider, 38
of 50 pairs were filter variants, which did not help). The synthesis reports go to
``synthesis.json`` in the output folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agents.learn.synth import TRANSFORMS, SynthesisReport
from bench.datasets import Example

SYNTHESIS_LOG = "synthesis.json"


def first_per_database(examples: Iterable[Example], k: int) -> list[Example]:
    """The first ``k`` examples of each database, in source order."""
    if k < 0:
        raise ValueError(f"--examples-per-db must be at least 0, got {k}")
    seen: dict[str, int] = {}
    kept: list[Example] = []
    for example in examples:
        if seen.get(example.database, 0) < k:
            seen[example.database] = seen.get(example.database, 0) + 1
            kept.append(example)
    return kept


def synthesis_transforms(given: str | None) -> tuple[str, ...]:
    """``--synthesize-transforms``: the transforms named (comma-separated, in the order of
    :data:`~agents.learn.synth.TRANSFORMS`), or all of them; ValueError naming an unknown one."""
    if not given:
        return TRANSFORMS
    names = {name.strip() for name in given.split(",") if name.strip()}
    unknown = sorted(names - set(TRANSFORMS))
    if unknown or not names:
        raise ValueError(
            f"--synthesize-transforms: unknown {unknown or '(none given)'}; "
            f"choose from {', '.join(TRANSFORMS)}"
        )
    return tuple(t for t in TRANSFORMS if t in names)


def write_synthesis(out_dir: Path, reports: dict[str, SynthesisReport]) -> dict[str, Any]:
    """Write each database's report and their totals to ``synthesis.json``; the totals."""
    totals: dict[str, int] = {}
    for report in reports.values():
        for key, value in report.totals().items():
            totals[key] = totals.get(key, 0) + value
    data = {
        "totals": totals,
        "databases": {name: report.to_dict() for name, report in sorted(reports.items())},
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / SYNTHESIS_LOG).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return totals
