"""The ``[retrieval]`` settings (``ALMANAC_RETRIEVAL__<NAME>``): what each question's prompt may
hold from the knowledge base (:class:`indices.retriever.RetrievalOptions`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from indices.retriever import RetrievalOptions

_DEFAULT = RetrievalOptions()


class RetrievalSettings(BaseModel):
    """How much knowledge a question retrieves (``ALMANAC_RETRIEVAL__<NAME>``)."""

    model_config = ConfigDict(extra="forbid")

    budget_tokens: int = Field(
        default=_DEFAULT.budget_tokens,
        ge=100,
        le=100_000,
        description="tokens of knowledge (schema, business entries, examples) a prompt holds",
    )
    experiences: int = Field(
        default=_DEFAULT.experiences,
        ge=0,
        le=20,
        description="worked examples (similar verified questions with their SQL) per prompt",
    )
    experience_tokens: int = Field(
        default=_DEFAULT.experience_tokens,
        ge=0,
        description="of budget_tokens, kept for the worked examples first",
    )
    hops: int = Field(
        default=_DEFAULT.hops,
        ge=0,
        le=5,
        description="knowledge-graph hops from the entries the question names",
    )
    schema_tables: int = Field(
        default=_DEFAULT.schema_tables, ge=1, description="tables a prompt's schema shows at most"
    )
    business_items: int = Field(
        default=_DEFAULT.business_items,
        ge=0,
        description="business entries (synonyms, metrics, rules, mined facts) per prompt",
    )
    join_paths: int = Field(default=_DEFAULT.join_paths, ge=0, description="join paths per prompt")
    per_span: int = Field(
        default=_DEFAULT.per_span,
        ge=1,
        description="entries one matched phrase of the question may bring",
    )
    rules: int = Field(
        default=_DEFAULT.rules,
        ge=0,
        description="the database's rules a question's retrieval considers at most",
    )
    mined_by_facet: bool = Field(
        default=_DEFAULT.mined_by_facet,
        description="show mined knowledge that only the database facet reaches (nothing in the "
        "question points to it); off by default: with it, mining cost 2.5 EX points on Spider "
        "120 instead of 0.8 (docs/benchmarks.md, Lifelong learning)",
    )

    def options(self) -> RetrievalOptions:
        """The retriever's options these settings describe."""
        return RetrievalOptions(**self.model_dump())

    @model_validator(mode="after")
    def _examples_within_budget(self) -> RetrievalSettings:
        if self.experience_tokens > self.budget_tokens:
            raise ValueError(
                f"experience_tokens ({self.experience_tokens}) exceeds budget_tokens "
                f"({self.budget_tokens}): the examples' share is part of the budget"
            )
        return self
