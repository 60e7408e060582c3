"""``BaseUKF``: one piece of knowledge in the Unified Knowledge Format.

The fields follow the RubikSQL paper's six groups (metadata, content, provenance, retrieval,
relationships, life-cycle) plus free-form ``metadata`` and ``profile`` dictionaries. Identity
fields (see :data:`ukf.hashing.IDENTITY_FIELDS`) are frozen after construction; the ``id`` is a
stable hash of them and ``content_hash`` a hash of the payload (see :mod:`ukf.hashing`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from ukf import registry
from ukf.errors import FrozenFieldError, IdMismatchError, UKFError
from ukf.hashing import IDENTITY_FIELDS, canonical_json, stable_hash
from ukf.relations import Auth, Related
from ukf.tags import Tag, format_tag, normalize_tags, parse_tag, sanitize_tag_value, tag_values

if TYPE_CHECKING:
    from ukf.context import QueryContext

Source = Literal["system", "user", "auto", "tool", "derived", "synthetic", "unknown"]
AUTHORITATIVE_SOURCES: frozenset[str] = frozenset({"system", "user"})
# the metadata key of mined knowledge (from the query log, corrections, documents): its job,
# miner, trust and review status (agents.learn.mine.candidates)
MINING_KEY = "mining"
_COMPUTED = ("id", "content_hash")
_VERSION_NUMBER = re.compile(r"(\d+)$")


def utcnow() -> datetime:
    return datetime.now(UTC)


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def bump_version(version: str) -> str:
    """``v1 -> v2``, ``1.4 -> 1.5``; a version without a trailing number gets ``.1``."""
    match = _VERSION_NUMBER.search(version)
    if match is None:
        return f"{version}.1"
    return f"{version[: match.start()]}{int(match.group(1)) + 1}"


class BaseUKF(BaseModel):
    """A knowledge entry. Subclasses (templates) fix ``type`` and add constructors."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    default_composer: ClassVar[str] = "knowledge"

    # metadata
    type: str = "knowledge"
    name: str = Field(min_length=1)
    version: str = "v1"
    variant: str = "default"
    notes: str = ""
    short_description: str = ""
    description: str = ""
    # content
    content: str = ""
    content_resources: dict[str, Any] = Field(default_factory=dict)
    content_composers: dict[str, str] = Field(default_factory=dict)
    # provenance
    source: Source = "unknown"
    parents: list[str] = Field(default_factory=list)
    owner: str | None = None
    workspace: str | None = None
    creator: str | None = None
    # retrieval
    collection: str = "general"
    tags: tuple[str, ...] = ()
    synonyms: list[str] = Field(default_factory=list)
    triggers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    priority: int = 0
    # relationships
    related: list[Related] = Field(default_factory=list)
    auths: list[Auth] = Field(default_factory=list)
    # life-cycle
    timefluid: bool = False
    timestamp: datetime = Field(default_factory=utcnow)
    last_verified: datetime | None = None
    expiration: datetime | None = None
    inactive_mark: bool = False
    # free-form
    metadata: dict[str, Any] = Field(default_factory=dict)
    profile: dict[str, Any] = Field(default_factory=dict)

    _id: str | None = PrivateAttr(default=None)

    # ----------------------------------------------------------------- registration
    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        registry.register_type(cls.model_fields["type"].default, cls)

    # ------------------------------------------------------------------ validation
    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and any(key in data for key in _COMPUTED):
            return {key: value for key, value in data.items() if key not in _COMPUTED}
        return data

    @field_validator("tags", mode="before")
    @classmethod
    def _normalize_tags(cls, value: Any) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        return normalize_tags(value or ())

    @field_validator("synonyms")
    @classmethod
    def _normalize_synonyms(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(s.strip() for s in value if s and s.strip()))

    @field_validator("parents")
    @classmethod
    def _unique_parents(cls, value: list[str]) -> list[str]:
        return list(dict.fromkeys(value))

    @field_validator("timestamp", "last_verified", "expiration")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return _as_utc(value)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in IDENTITY_FIELDS and name in self.__dict__:
            raise FrozenFieldError(
                f"field {name!r} of UKF {self.id} is frozen; use derive() or clone() instead"
            )
        super().__setattr__(name, value)

    def __eq__(self, other: object) -> bool:
        """Equal when of the same template with equal fields (caches are ignored)."""
        if not isinstance(other, BaseUKF):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable model

    # ---------------------------------------------------------------------- hashes
    @property
    def id(self) -> str:
        """Stable hash of the identity fields (cached: they cannot change)."""
        if self._id is None:
            self._id = stable_hash(self.identity())
        return self._id

    @property
    def content_hash(self) -> str:
        """Hash of ``content`` and ``content_resources``."""
        return stable_hash({"content": self.content, "content_resources": self.content_resources})

    def identity(self) -> dict[str, Any]:
        """The identity fields and their values, as hashed into :attr:`id`."""
        return {name: getattr(self, name) for name in IDENTITY_FIELDS}

    # --------------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary including ``id`` and ``content_hash``."""
        data = self.model_dump(mode="json")
        return {"id": self.id, "content_hash": self.content_hash, **data}

    def to_json(self) -> str:
        """Canonical JSON for one entry (one JSON Lines line)."""
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaseUKF:
        """Build the right template class from ``data["type"]``.

        When ``data`` carries ``id`` or ``content_hash``, they must equal what the fields
        produce; a mismatch raises :class:`IdMismatchError` (corrupt or hand-edited data).
        """
        if not isinstance(data, Mapping):
            raise UKFError(f"a UKF entry must be a JSON object, got {type(data).__name__}")
        target = registry.type_for(data.get("type", "knowledge"))
        if cls is not BaseUKF and not issubclass(target, cls):
            raise UKFError(f"type {data.get('type')!r} is not a {cls.__name__}")
        entry = target.model_validate(data)
        for key in _COMPUTED:
            expected = data.get(key)
            if expected is not None and expected != getattr(entry, key):
                raise IdMismatchError(
                    f"field {key!r} is {expected!r} but the entry's fields give "
                    f"{getattr(entry, key)!r} (name={entry.name!r})"
                )
        return entry

    # -------------------------------------------------------------------- versions
    def clone(self, **changes: Any) -> BaseUKF:
        """A copy with ``changes`` applied (identity fields included: then a new id)."""
        data = self.model_dump()
        data.update(changes)
        return BaseUKF.from_dict(data)

    def derive(self, **changes: Any) -> BaseUKF:
        """A new version of this entry: bumped ``version``, ``parents=[self.id]``, fresh time."""
        changes.setdefault("version", bump_version(self.version))
        changes.setdefault("parents", [self.id])
        changes.setdefault("timestamp", utcnow())
        return self.clone(**changes)

    # --------------------------------------------------------------------- helpers
    def tag_values(self, slot: str) -> list[str]:
        return tag_values(self.tags, slot)

    def has_tag(self, slot: str, value: str | None = None) -> bool:
        slot = slot.upper()
        return any(t.slot == slot and (value is None or t.value == value) for t in self.parsed_tags)

    @property
    def parsed_tags(self) -> list[Tag]:
        return [parse_tag(tag) for tag in self.tags]

    @staticmethod
    def make_tags(pairs: Iterable[tuple[str, object]], extra: Iterable[str] = ()) -> list[str]:
        """Tags from ``(slot, value)`` pairs (values sanitised, ``None`` skipped) plus ``extra``."""
        made = [
            format_tag(slot, sanitize_tag_value(value))
            for slot, value in pairs
            if value is not None
        ]
        return made + list(extra)

    def relate(
        self, relation: str, target: str, *, relation_id: str | None = None, **resources: Any
    ) -> None:
        """Append ``(self.id, relation, target, ...)`` unless it is already there."""
        item = Related(
            subject=self.id,
            relation=relation,
            object=target,
            relation_id=relation_id,
            resources=resources,
        )
        if item not in self.related:
            self.related = [*self.related, item]

    def add_synonyms(self, synonyms: Iterable[str]) -> None:
        self.synonyms = [*self.synonyms, *synonyms]

    @property
    def is_authoritative(self) -> bool:
        """Schema, user-written or human-verified knowledge; mined entries never override it."""
        return self.source in AUTHORITATIVE_SOURCES or self.last_verified is not None

    @property
    def is_mined(self) -> bool:
        """Mined knowledge (``metadata["mining"]``): from the query log, a correction or a
        document, as opposed to the schema or a hand-written entry."""
        return MINING_KEY in self.metadata

    def is_expired(self, now: datetime | None = None) -> bool:
        return self.expiration is not None and self.expiration <= (_as_utc(now) or utcnow())

    # ------------------------------------------------------------------- rendering
    def text(self, composer: str = "default", **context: Any) -> str:
        """Render this entry with a composer.

        ``composer`` is a role looked up in ``content_composers`` first (``"default"`` falls
        back to the template's default composer), else a registered composer name.
        """
        name = self.content_composers.get(composer)
        if name is None:
            name = self.default_composer if composer == "default" else composer
        return registry.get_composer(name)(self, **context)

    def triggered(self, context: QueryContext) -> bool:
        """Whether every trigger of this entry accepts ``context``."""
        return registry.evaluate_triggers(self, context)
