"""Experiences: a question asked in a context, with its SQL, reasoning and result schema."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from ukf.base import BaseUKF
from ukf.context import QueryContext
from ukf.hashing import stable_hash


class ExperienceUKF(BaseUKF):
    """A logged or labeled question.

    ``content_resources`` holds ``question``, ``context`` ({query_time, user_profile}),
    ``sql``, ``dialect``, ``result_schema`` (list of {name, type}), ``cot`` (reasoning),
    ``labeled`` (gold SQL known) and ``verified`` (checked by a human). The same question asked
    in another context is another entry: the ``variant`` is a hash of the context.
    """

    type: Literal["experience"] = "experience"
    default_composer: ClassVar[str] = "experience"

    @classmethod
    def create(
        cls,
        question: str,
        sql: str | None = None,
        *,
        database: str | None = None,
        context: QueryContext | dict[str, Any] | None = None,
        result_schema: list[dict[str, str]] | None = None,
        cot: str | None = None,
        dialect: str | None = None,
        labeled: bool = False,
        verified: bool = False,
        **fields: Any,
    ) -> ExperienceUKF:
        asked = QueryContext.model_validate(context or {})
        ctx = asked.record()
        fields["content_resources"] = {
            "question": question,
            "context": ctx,
            "sql": sql,
            "dialect": dialect,
            "result_schema": result_schema or [],
            "cot": cot,
            "labeled": labeled,
            "verified": verified,
            **fields.get("content_resources", {}),
        }
        fields["tags"] = cls.make_tags(
            [("DATABASE", database), ("DIALECT", dialect)], fields.get("tags", ())
        )
        fields.setdefault("variant", stable_hash(ctx)[:12] if asked.has_record else "default")
        fields.setdefault("collection", "experiences")
        fields.setdefault("content", sql or "")
        return cls(name=question, **fields)

    @property
    def question(self) -> str:
        return self.content_resources.get("question", self.name)

    @property
    def sql(self) -> str | None:
        return self.content_resources.get("sql")

    @property
    def cot(self) -> str | None:
        return self.content_resources.get("cot")

    @property
    def context(self) -> QueryContext:
        return QueryContext.model_validate(self.content_resources.get("context") or {})

    @property
    def labeled(self) -> bool:
        return bool(self.content_resources.get("labeled"))

    @property
    def verified(self) -> bool:
        return bool(self.content_resources.get("verified"))

    @property
    def trusted(self) -> bool:
        """Labeled or verified: a SQL someone vouched for (a logged answer nobody checked
        is not), what a prompt may show as a worked example."""
        return self.labeled or self.verified

    @property
    def is_authoritative(self) -> bool:
        return super().is_authoritative or self.trusted
