"""API keys: random secrets shown once, stored as salted and peppered hashes.

A key reads ``alm_<id>_<secret>``. The ``id`` (12 hex digits) is stored in clear and finds the
row; the secret (256 random bits) is stored only as ``HMAC-SHA256(pepper, salt + secret)``.
The pepper lives outside the database (a setting or a file in the data dir), so a copy of the
database alone cannot check guesses. The secrets are random, not passwords: a fast keyed hash
is enough, and lets every request be checked in microseconds.

Every process that checks or makes keys on a store must use the same pepper (replicas on other
hosts do not share a data dir, and each would make its own pepper file, under which every key is
refused). :meth:`KeyStore.ensure_pepper` records a fingerprint of the first pepper in the store
(``store_meta`` row ``api_key_pepper``: 56 bits of an HMAC of a fixed text) and refuses another.

A key may carry an expiry time (``expires_at``, UTC; None: never): from then on it is refused
like a revoked one, except that :meth:`KeyStore.authenticate` tells the holder of the right
secret that it expired (:class:`KeyExpiredError`), which tells nobody else anything.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, overload

from sqlalchemy import Connection, Engine, Row, insert, select, update
from sqlalchemy.exc import IntegrityError

from kb import schema
from kb.engine import read_transaction, write_transaction

PREFIX = "alm"
_KEY = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{20,128}})$")
_K = schema.api_keys
_META = schema.store_meta
PEPPER_CHECK = "api_key_pepper"


class KeyNotFoundError(KeyError):
    """No API key with this id."""

    def __init__(self, key_id: str) -> None:
        super().__init__(key_id)
        self.key_id = key_id

    def __str__(self) -> str:
        return f"unknown API key id {self.key_id!r}"


class PepperMismatchError(ValueError):
    """This process's pepper is not the one the store's keys were made with."""

    def __str__(self) -> str:
        return (
            "the API key pepper differs from the one this store's keys were made with, so "
            "every key would be refused: give every server and `almanac keys` on this store "
            "the same ALMANAC_API_KEY_PEPPER (or the same <data_dir>/secrets/api-key-pepper)"
        )


class KeyExpiredError(Exception):
    """The presented key is right, but it expired (raised only for the right secret)."""

    def __init__(self, key_id: str, expires_at: datetime) -> None:
        super().__init__(key_id, expires_at)
        self.key_id, self.expires_at = key_id, expires_at

    def __str__(self) -> str:
        return f"API key expired at {self.expires_at.isoformat(timespec='seconds')}"


class ExpiryInPastError(ValueError):
    """A new key's expiry time is not in the future."""

    def __init__(self, expires_at: datetime) -> None:
        super().__init__(expires_at)
        self.expires_at = expires_at

    def __str__(self) -> str:
        when = self.expires_at.isoformat(timespec="seconds")
        return f"the key's expiry time {when} is not in the future"


def pepper_fingerprint(pepper: bytes) -> int:
    """56 bits that tell peppers apart (an HMAC of a fixed text: nothing to learn a key from)."""
    digest = hmac.new(pepper, b"almanac api key pepper check", hashlib.sha256).digest()
    return int.from_bytes(digest[:7], "big")


@dataclass(frozen=True)
class ApiKey:
    """A stored key (never its secret)."""

    id: str
    role: str
    user: str
    workspace: str | None
    groups: tuple[str, ...]
    label: str
    created_at: datetime
    created_by: str | None = None
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None
    expires_at: datetime | None = None

    def expired_by(self, now: datetime | None = None) -> bool:
        """Whether the key has expired by ``now`` (default: the current time)."""
        return self.expires_at is not None and self.expires_at <= (now or datetime.now(UTC))

    @property
    def expired(self) -> bool:
        return self.expired_by()

    @property
    def active(self) -> bool:
        """Neither revoked nor expired."""
        return self.revoked_at is None and not self.expired

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "role": self.role,
            "user": self.user,
            "workspace": self.workspace,
            "groups": list(self.groups),
            "label": self.label,
            "created_at": self.created_at,
            "created_by": self.created_by,
            "last_used_at": self.last_used_at,
            "revoked_at": self.revoked_at,
            "expires_at": self.expires_at,
            "expired": self.expired,
            "active": self.active,
        }


def parse_key(presented: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed key, else None."""
    match = _KEY.match(presented.strip())
    return (match.group(1), match.group(2)) if match else None


def hash_secret(secret: str, salt: str, pepper: bytes) -> str:
    return hmac.new(pepper, f"{salt}:{secret}".encode(), hashlib.sha256).hexdigest()


@overload
def _utc(value: datetime) -> datetime: ...
@overload
def _utc(value: datetime | None) -> datetime | None: ...
def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def _from_row(row: Row[Any]) -> ApiKey:
    return ApiKey(
        id=row.id,
        role=row.role,
        user=row.user_name,
        workspace=row.workspace,
        groups=tuple(json.loads(row.groups)),
        label=row.label,
        created_at=_utc(row.created_at),
        created_by=row.created_by,
        last_used_at=_utc(row.last_used_at),
        revoked_at=_utc(row.revoked_at),
        expires_at=_utc(row.expires_at),
    )


def expiry(
    *,
    expires_at: datetime | None = None,
    expires_in_days: float | None = None,
    now: datetime | None = None,
) -> datetime | None:
    """The expiry time a key asked for: ``expires_at`` (a time without an offset is UTC) or
    ``expires_in_days`` from ``now``; None for neither (the key never expires).

    Raises:
        ValueError: both were given, or ``expires_in_days`` is not positive.
        ExpiryInPastError: the time is not in the future.
    """
    now = now or datetime.now(UTC)
    if expires_at is not None and expires_in_days is not None:
        raise ValueError("give expires_at or expires_in_days, not both")
    if expires_in_days is not None:
        if not expires_in_days > 0:
            raise ValueError(f"expires_in_days must be positive, not {expires_in_days!r}")
        try:
            return now + timedelta(days=expires_in_days)
        except OverflowError:
            raise ValueError(f"expires_in_days {expires_in_days!r} is too far ahead") from None
    if expires_at is None:
        return None
    expires_at = _utc(expires_at).astimezone(UTC)
    if expires_at <= now:
        raise ExpiryInPastError(expires_at)
    return expires_at


class KeyStore:
    """The ``api_keys`` table.

    Args:
        engine: an engine on the knowledge store's database (migrated).
        pepper: the server-wide secret mixed into every hash.
    """

    def __init__(self, engine: Engine, pepper: bytes) -> None:
        if len(pepper) < 16:
            raise ValueError("the API key pepper must be at least 16 bytes")
        self._engine, self._pepper = engine, pepper

    def ensure_pepper(self) -> None:
        """Record this pepper's fingerprint in the store if none is; refuse a different one.

        Raises:
            PepperMismatchError: the store's keys were made with another pepper.
        """
        mine = pepper_fingerprint(self._pepper)
        try:
            with write_transaction(self._engine) as conn:
                stored = self._stored_fingerprint(conn)
                if stored is None:
                    conn.execute(insert(_META).values(key=PEPPER_CHECK, value=mine))
                    return
        except IntegrityError:  # another process recorded its pepper between our read and insert
            with read_transaction(self._engine) as conn:
                stored = self._stored_fingerprint(conn)
        if stored != mine:
            raise PepperMismatchError()

    @staticmethod
    def _stored_fingerprint(conn: Connection) -> int | None:
        query = select(_META.c.value).where(_META.c.key == PEPPER_CHECK)
        return conn.execute(query).scalar()

    def create(
        self,
        *,
        role: str,
        user: str,
        workspace: str | None = None,
        groups: tuple[str, ...] | list[str] = (),
        label: str = "",
        created_by: str | None = None,
        expires_at: datetime | None = None,
    ) -> tuple[ApiKey, str]:
        """A new key and its full secret (shown once, never stored).

        ``expires_at``: when the key stops working (a time without an offset is UTC); None:
        never. :class:`ExpiryInPastError` when it is not in the future.
        """
        now = datetime.now(UTC)
        expires_at = expiry(expires_at=expires_at, now=now)
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        salt = secrets.token_hex(16)
        key = ApiKey(
            id=key_id,
            role=role,
            user=user,
            workspace=workspace,
            groups=tuple(sorted(set(groups))),
            label=label,
            created_at=now,
            created_by=created_by,
            expires_at=expires_at,
        )
        with write_transaction(self._engine) as conn:
            conn.execute(
                insert(_K).values(
                    id=key.id,
                    salt=salt,
                    secret_hash=hash_secret(secret, salt, self._pepper),
                    role=role,
                    user_name=user,
                    workspace=workspace,
                    groups=json.dumps(list(key.groups)),
                    label=label,
                    created_at=key.created_at,
                    created_by=created_by,
                    expires_at=expires_at,
                )
            )
        return key, f"{PREFIX}_{key_id}_{secret}"

    def verify(self, presented: str) -> ApiKey | None:
        """The active key ``presented`` is, or None (malformed, unknown, revoked, expired,
        wrong secret)."""
        try:
            return self.authenticate(presented)
        except KeyExpiredError:
            return None

    def authenticate(self, presented: str) -> ApiKey | None:
        """The active key ``presented`` is, or None (malformed, unknown, revoked, wrong secret).

        Raises:
            KeyExpiredError: the secret is right but the key has expired (only then, so an
                unknown id or a wrong secret learns nothing about the key's expiry).
        """
        parsed = parse_key(presented)
        if parsed is None:
            return None
        key_id, secret = parsed
        with read_transaction(self._engine) as conn:
            row = conn.execute(select(_K).where(_K.c.id == key_id)).first()
        if row is None or row.revoked_at is not None:
            return None
        expected = hash_secret(secret, row.salt, self._pepper)
        if not hmac.compare_digest(expected, row.secret_hash):
            return None
        key = _from_row(row)
        if key.expired:
            assert key.expires_at is not None
            raise KeyExpiredError(key.id, key.expires_at)
        return key

    def get(self, key_id: str) -> ApiKey:
        with read_transaction(self._engine) as conn:
            row = conn.execute(select(_K).where(_K.c.id == key_id)).first()
        if row is None:
            raise KeyNotFoundError(key_id)
        return _from_row(row)

    def list(self, *, include_revoked: bool = False) -> list[ApiKey]:
        query = select(_K).order_by(_K.c.created_at, _K.c.id)
        if not include_revoked:
            query = query.where(_K.c.revoked_at.is_(None))
        with read_transaction(self._engine) as conn:
            return [_from_row(row) for row in conn.execute(query)]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key (idempotent); :class:`KeyNotFoundError` for an unknown id."""
        with write_transaction(self._engine) as conn:
            conn.execute(
                update(_K)
                .where(_K.c.id == key_id, _K.c.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
        return self.get(key_id)

    def touch(self, key_id: str, when: datetime) -> None:
        """Record that the key was used (callers throttle this)."""
        with write_transaction(self._engine) as conn:
            conn.execute(update(_K).where(_K.c.id == key_id).values(last_used_at=when))
