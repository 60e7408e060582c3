"""Generic knowledge and documents."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from ukf.base import BaseUKF


class KnowledgeUKF(BaseUKF):
    """Free-form knowledge: a glossary entry, a note, a fact."""

    type: Literal["knowledge"] = "knowledge"
    default_composer: ClassVar[str] = "knowledge"

    @classmethod
    def create(
        cls, name: str, content: str, *, database: str | None = None, **fields: Any
    ) -> KnowledgeUKF:
        fields["tags"] = cls.make_tags([("DATABASE", database)], fields.get("tags", ()))
        return cls(name=name, content=content, **fields)


class DocumentUKF(BaseUKF):
    """A document (or a chunk of one): manuals, wiki pages, metric handbooks."""

    type: Literal["document"] = "document"
    default_composer: ClassVar[str] = "document"

    @classmethod
    def create(
        cls,
        name: str,
        content: str,
        *,
        uri: str | None = None,
        mime_type: str = "text/markdown",
        chunk: int | None = None,
        database: str | None = None,
        **fields: Any,
    ) -> DocumentUKF:
        resources = {"uri": uri, "mime_type": mime_type, "chunk": chunk}
        fields["content_resources"] = {**resources, **fields.get("content_resources", {})}
        fields["tags"] = cls.make_tags(
            [("DATABASE", database), ("MIME", mime_type)], fields.get("tags", ())
        )
        fields.setdefault("collection", "documents")
        return cls(name=name, content=content, **fields)

    @property
    def uri(self) -> str | None:
        return self.content_resources.get("uri")
