"""Who is calling: roles, permissions, and the identity an API key stands for.

Roles and what they may do (:data:`ROLE_PERMISSIONS`):

- ``analyst``: ask, give feedback, read the knowledge visible to them;
- ``ops``: read and edit knowledge, submit and watch jobs, read metrics;
- ``ml``: ask, read knowledge, watch jobs, distillation (later);
- ``admin``: everything, including API keys and the audit log.

What knowledge an identity sees is decided by :mod:`server.access` (owner, workspace and UKF
auths); the role only says which operations it may attempt.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import cast

from kb.visibility import Reader
from server.keys import ApiKey, KeyExpiredError, KeyStore

REFUSED = "invalid or revoked API key"


class Role(StrEnum):
    ANALYST = "analyst"
    OPS = "ops"
    ML = "ml"
    ADMIN = "admin"


class Permission(StrEnum):
    ASK = "ask"
    FEEDBACK = "feedback"
    KNOWLEDGE_READ = "knowledge:read"
    KNOWLEDGE_WRITE = "knowledge:write"
    JOBS_READ = "jobs:read"
    JOBS_WRITE = "jobs:write"
    DISTILL = "distill"
    METRICS = "metrics"
    AUDIT = "audit:read"
    KEYS = "keys"


ROLE_PERMISSIONS: dict[Role, frozenset[Permission]] = {
    Role.ANALYST: frozenset({Permission.ASK, Permission.FEEDBACK, Permission.KNOWLEDGE_READ}),
    Role.OPS: frozenset(
        {
            Permission.KNOWLEDGE_READ,
            Permission.KNOWLEDGE_WRITE,
            Permission.JOBS_READ,
            Permission.JOBS_WRITE,
            Permission.METRICS,
        }
    ),
    Role.ML: frozenset(
        {Permission.ASK, Permission.KNOWLEDGE_READ, Permission.JOBS_READ, Permission.DISTILL}
    ),
    Role.ADMIN: frozenset(Permission),
}


@dataclass(frozen=True)
class Identity:
    """The caller behind an API key."""

    key_id: str
    role: Role
    user: str
    workspace: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def of(cls, key: ApiKey) -> Identity:
        return cls(key.id, Role(key.role), key.user, key.workspace, frozenset(key.groups))

    @property
    def permissions(self) -> frozenset[Permission]:
        return ROLE_PERMISSIONS[self.role]

    def can(self, permission: Permission) -> bool:
        return permission in self.permissions

    @property
    def reader(self) -> Reader:
        """How the knowledge store sees this caller (see :mod:`kb.visibility`)."""
        return Reader(user=self.user, groups=self.groups, workspace=self.workspace)

    def to_dict(self) -> dict[str, object]:
        return {
            "key_id": self.key_id,
            "role": self.role.value,
            "user": self.user,
            "workspace": self.workspace,
            "groups": sorted(self.groups),
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Identity:
        return cls(
            key_id=str(data["key_id"]),
            role=Role(str(data["role"])),
            user=str(data["user"]),
            workspace=cast("str | None", data.get("workspace")),
            groups=frozenset(cast("Iterable[str]", data.get("groups") or ())),
        )


class Authenticator:
    """Turns a presented key into an :class:`Identity`, with a short in-memory cache.

    Args:
        keys: the key table.
        cache_s: how long a checked key is trusted without asking the database again; a key
            revoked through this process is forgotten at once, elsewhere (another replica)
            within ``cache_s``.
        touch_every_s: ``last_used_at`` is written at most this often per key.

    ``cache_s`` counts from the database read, not from its answer, and a check that was in
    flight when a key was forgotten does not fill the cache: so a revoked key is refused
    here at once and by every other replica within ``cache_s`` of the revocation. A key's
    expiry time is cached with it: an expired key is refused at once, cached or not.
    """

    def __init__(self, keys: KeyStore, *, cache_s: float = 5.0, touch_every_s: float = 60.0):
        self.keys = keys
        self.cache_s, self.touch_every_s = cache_s, touch_every_s
        self._cache: dict[str, tuple[float, Identity, datetime | None]] = {}
        self._touched: dict[str, float] = {}
        self._forgotten = 0  # forget() calls so far: a check older than the last one is stale
        self._lock = threading.Lock()

    @staticmethod
    def _fingerprint(presented: str) -> str:
        return hashlib.sha256(presented.encode()).hexdigest()

    def cached(self, presented: str) -> Identity | None:
        """The identity if this key was checked within ``cache_s`` (no I/O)."""
        found = self._cache.get(self._fingerprint(presented))
        if found is None or time.monotonic() - found[0] > self.cache_s:
            return None
        _read_at, identity, expires_at = found
        if expires_at is not None and expires_at <= datetime.now(UTC):
            return None
        return identity

    def identify(self, presented: str) -> Identity | None:
        """Check ``presented`` against the database (and cache the answer when valid)."""
        identity = self.cached(presented)
        if identity is not None:
            return identity
        with self._lock:
            forgotten = self._forgotten
        read_at = time.monotonic()
        key = self.keys.verify(presented)
        if key is None:
            return None
        identity = Identity.of(key)
        now = time.monotonic()
        with self._lock:
            if self._forgotten == forgotten:  # else the key may have been revoked meanwhile
                entry = (read_at, identity, key.expires_at)
                self._cache[self._fingerprint(presented)] = entry
            due = now - self._touched.get(key.id, -self.touch_every_s) >= self.touch_every_s
            if due:
                self._touched[key.id] = now
        if due:
            self.keys.touch(key.id, datetime.now(UTC))
        return identity

    def refusal(self, presented: str) -> str:
        """Why ``presented`` was refused, for the 401: "API key expired at <time>" when it is
        the right secret of an expired key, else what any other refusal says (nothing about
        whether the id exists)."""
        try:
            self.keys.authenticate(presented)
        except KeyExpiredError as expired:
            return str(expired)
        return REFUSED

    def forget(self, key_id: str) -> None:
        """Drop cached identities of ``key_id`` (after a revocation)."""
        with self._lock:
            self._forgotten += 1
            self._cache = {k: v for k, v in self._cache.items() if v[1].key_id != key_id}
