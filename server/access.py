"""The one place that decides what knowledge a caller may see and change.

Reading: the caller's :class:`kb.visibility.Reader` (user, groups, workspace) goes with every
store read, so the store's SQL filter (:func:`kb.visibility.visible_clause`) applies: global
entries, the caller's workspace, the caller's own entries, and of those only entries whose
UKF ``auths`` list the caller or one of their groups (or that have no auths). Hits found by
in-memory indices are passed through :func:`visible_documents` before anything is returned.

Writing: a caller may write only what they could read afterwards (no entries in another
workspace, owned by another user, or hidden from them by auths), and an entry that carries
auths may be changed only by a principal holding ``write`` or ``admin`` authority on it. The
``admin`` role is exempt from the auths rules (it imports curated packs whose entries are
readable by some groups only), never from the workspace and owner rules.

Export: an admin's export is a backup of the whole store (:func:`export_reader`); everyone
else exports what they can see.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kb.store import KnowledgeStore
from kb.visibility import Reader, is_visible
from server.auth import Identity, Role
from ukf import BaseUKF

WRITE_AUTHORITIES = frozenset({"write", "admin"})


class AccessDeniedError(PermissionError):
    """The caller may not write this entry; the message says why."""


def visible_documents(
    store: KnowledgeStore, ids: Iterable[str], identity: Identity
) -> dict[str, dict[str, Any]]:
    """The entries among ``ids`` that ``identity`` may see, in the order given, as their
    stored JSON documents (answers only serialize them: no model is rebuilt)."""
    return store.get_documents(ids, reader=identity.reader)


def export_reader(identity: Identity) -> Reader | None:
    """Whose view an export is taken with: everything for admins, else the caller's."""
    return None if identity.role is Role.ADMIN else identity.reader


def check_writable(entry: BaseUKF, identity: Identity) -> None:
    """Raise :class:`AccessDeniedError` unless ``identity`` may write ``entry``."""
    reader = identity.reader
    if entry.workspace is not None and entry.workspace != identity.workspace:
        raise AccessDeniedError(
            f"entry {entry.id} is in workspace {entry.workspace!r}; "
            f"your key works in {identity.workspace!r}"
        )
    if entry.owner is not None and entry.owner != identity.user:
        raise AccessDeniedError(
            f"entry {entry.id} belongs to {entry.owner!r}; you are {identity.user!r}"
        )
    if identity.role is Role.ADMIN:
        return
    if not is_visible(entry, reader):
        granted = sorted(f"{a.user}:{a.authority}" for a in entry.auths)
        raise AccessDeniedError(
            f"entry {entry.id} has auths {granted} that hide it from {sorted(reader.principals)}"
        )
    if entry.auths and not any(
        auth.user in reader.principals and auth.authority in WRITE_AUTHORITIES
        for auth in entry.auths
    ):
        raise AccessDeniedError(
            f"entry {entry.id}: none of {sorted(reader.principals)} holds write or admin "
            "authority in its auths"
        )
