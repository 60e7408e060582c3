"""Evidence: the knowledge retrieved for one question, each item with the reasons it is there."""

from __future__ import annotations

from dataclasses import dataclass, field

from indices.hits import Hit
from ukf import BaseUKF

CHARS_PER_TOKEN = 4  # estimate used for budgeting; close for English text and SQL


def estimate_tokens(text: str) -> int:
    return max(1, (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN)


@dataclass
class EvidenceItem:
    """One retrieved entry, its rendered text and every hit that brought it in."""

    entry: BaseUKF
    hits: list[Hit] = field(default_factory=list)
    text: str = ""
    tokens: int = 0

    @property
    def score(self) -> float:
        return sum(hit.score for hit in self.hits)

    @property
    def reasons(self) -> list[str]:
        return sorted({hit.reason for hit in self.hits})

    @property
    def spans(self) -> list[tuple[int, int]]:
        return sorted({hit.span for hit in self.hits if hit.span is not None})


@dataclass
class Evidence:
    """What the retriever found, in prompt order, within the token budget."""

    question: str
    items: list[EvidenceItem] = field(default_factory=list)
    dropped: list[EvidenceItem] = field(default_factory=list)
    join_paths: list[list[dict]] = field(default_factory=list)
    budget: int = 0

    @property
    def tokens(self) -> int:
        return sum(item.tokens for item in self.items)

    def ids(self, type_name: str | None = None) -> list[str]:
        return [i.entry.id for i in self.items if type_name is None or i.entry.type == type_name]
