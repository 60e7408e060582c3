"""The files of a distill dataset folder and how training reads them.

Kept apart from :mod:`distill.dataset` (which builds the folder from a knowledge store and so
imports the store, the indices and the agents) so that training — on a GPU node, say — needs
only the folder and the training libraries.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TRAIN, VALIDATION, MANIFEST = "train.jsonl", "validation.jsonl", "manifest.json"


class EmptyDatasetError(ValueError):
    """No experience could become a training tuple."""


def read_tuples(path: Path) -> list[dict[str, Any]]:
    """The tuples of a JSONL file; a malformed line raises ``ValueError`` naming it."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON: {exc.msg}") from None
    return rows
