"""``manifest.json`` of a dataset: where it came from, what it holds, how it was cut.

Fields: ``store`` (the store's ``version`` and ``hash``, a SHA-256 over the version and the
content hash of every experience the tuples came from), ``counts`` (by source: scored, kept,
train, validation; dropped with the reasons), ``kept_share``, ``tokens`` (prompt + target
lengths of the kept tuples: min, mean, p95, max; counted with the student's tokenizer when
one is given, else estimated at 4 characters a token), ``split`` (the rule), ``curation``
(the weights) and ``created_at``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from indices.evidence import estimate_tokens
from kb.store import KnowledgeStore

if TYPE_CHECKING:
    from distill.dataset import DatasetOptions, TrainingTuple


class Tokenizer(Protocol):
    def apply_chat_template(self, conversation: list[dict[str, str]], **kwargs: Any) -> Any: ...


def tuple_tokens(t: TrainingTuple, tokenizer: Tokenizer | None) -> int:
    """Prompt + target length of ``t`` in tokens (estimated without a tokenizer)."""
    conversation = [*t.messages, {"role": "assistant", "content": t.target}]
    if tokenizer is None:
        return sum(estimate_tokens(m["content"]) for m in conversation)
    ids = tokenizer.apply_chat_template(conversation, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return len(ids)


def store_hash(store: KnowledgeStore, ids: Sequence[str]) -> tuple[int, str]:
    """(store version, SHA-256 over it and the content hashes of ``ids``)."""
    version = store.version
    entries = store.get_many(sorted(set(ids)))
    digest = hashlib.sha256(str(version).encode())
    for uid in sorted(entries):
        digest.update(f"\n{uid}:{entries[uid].content_hash}".encode())
    return version, digest.hexdigest()


def length_stats(lengths: list[int]) -> dict[str, float]:
    if not lengths:
        return {"min": 0, "mean": 0, "p95": 0, "max": 0}
    ordered = sorted(lengths)
    p95 = ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]
    mean = round(sum(ordered) / len(ordered), 1)
    return {"min": ordered[0], "mean": mean, "p95": p95, "max": ordered[-1]}


def write_manifest(
    path: Path,
    store: KnowledgeStore,
    tuples: Sequence[TrainingTuple],
    options: DatasetOptions,
    *,
    dropped: dict[str, int],
    tokenizer: Tokenizer | None = None,
) -> dict[str, Any]:
    """Write the manifest of ``tuples`` (kept and dropped) to ``path`` and return it."""
    kept = [t for t in tuples if t.score.get("kept")]
    counts: dict[str, dict[str, int]] = {}
    for label, chosen in (
        ("scored", tuples),
        ("kept", kept),
        ("train", [t for t in kept if t.split == "train"]),
        ("validation", [t for t in kept if t.split == "validation"]),
    ):
        counts[label] = dict(sorted(Counter(t.source for t in chosen).items()))
    reasons = Counter(str(t.score.get("dropped")) for t in tuples if not t.score.get("kept"))
    version, digest = store_hash(store, [t.id for t in tuples])
    manifest = {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "store": {"version": version, "hash": digest},
        "databases": sorted({t.database for t in tuples}),
        "counts": counts,
        "dropped": {**dropped, **dict(reasons)},
        "kept_share": round(len(kept) / len(tuples), 4) if tuples else 0.0,
        "tokens": {
            "counted_with": "tokenizer" if tokenizer is not None else "estimate (4 chars/token)",
            **length_stats([tuple_tokens(t, tokenizer) for t in kept]),
        },
        "split": options.split.describe(),
        "curation": options.curation.describe(),
        "files": {"train": "train.jsonl", "validation": "validation.jsonl"},
    }
    path.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest
