"""The one place that decides what knowledge a caller may see and change.

Reading: the caller's :class:`kb.visibility.Reader` (user, groups, workspace) goes with every
store read, so the store's SQL filter (:func:`kb.visibility.visible_clause`) applies: global
entries, the caller's workspace, the caller's own entries, and of those only entries whose
UKF ``auths`` list the caller or one of their groups (or that have no auths). Hits found by
in-memory indices are passed through :func:`visible_documents` before anything is returned.

Writing (:func:`check_writable`, for the entry as it would be stored):

- a caller may write only what they could read afterwards: no entries in another workspace,
  owned by another user, or hidden from them by auths;
- an entry that carries auths may be written only by a principal holding ``write`` or
  ``admin`` authority on it;
- the **global layer** (no workspace, no owner: what every workspace sees) is written only by
  admin keys and keys without a workspace (:func:`writes_globally`). A key scoped to a
  workspace is refused with a 403 that tells it to write into its workspace instead (an entry
  with ``"workspace": "<its workspace>"``, which overlays the global one there); it is not
  rewritten silently, because that would change the entry's id behind the caller's back. Jobs
  that write global knowledge (profiling) follow the same rule (:func:`check_global_writer`).

The ``admin`` role is exempt from the auths rules (it imports curated packs whose entries are
readable by some groups only), never from the workspace and owner rules.

Replacing (:func:`check_replaceable`): a write whose id is already stored (import, and ``POST``
before it answers 409) is also checked against the *stored* entry, because ``auths`` is not an
identity field: the same id can carry auths that the incoming line leaves out. Workspace and
owner are identity fields, so the stored entry is always in the same layer; what can refuse
here is its auths. Inactive (deleted) entries are checked too: an import would revive them.

Ids the caller cannot see: a write never reveals that an invisible id is stored.
``PATCH``/``DELETE`` of an invisible id answer the same 404 as an unknown id. ``POST`` and
import of an entry whose id is stored but invisible are refused with
:data:`HIDDEN_ENTRY_MESSAGE` (403): it says neither that the id exists nor anything of the
stored entry (content, auths, whether it is active), and nothing is written (no overlay entry
is created in its place: an entry the caller did not ask for would be harder to explain than
a refusal). The refusal itself is the one bit a caller can learn by guessing an entry's
identity fields; it is inherent in ids derived from them, and carries no content.

Export: an admin's export is a backup of the whole store (:func:`export_reader`); everyone
else exports what they can see.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kb.store import KnowledgeStore
from kb.visibility import GLOBAL_LAYER, Reader, is_visible, layer_of
from server.auth import Identity, Role
from ukf import BaseUKF

WRITE_AUTHORITIES = frozenset({"write", "admin"})
HIDDEN_ENTRY_MESSAGE = "entry {id} cannot be written with your key"


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


def writes_globally(identity: Identity) -> bool:
    """Whether ``identity`` may write the global layer: admins, and keys without a workspace."""
    return identity.role is Role.ADMIN or identity.workspace is None


def check_global_writer(identity: Identity, what: str) -> None:
    """Raise :class:`AccessDeniedError` unless ``identity`` may write global knowledge;
    ``what`` names the write (``"entry <id> is"``, ``"profile jobs write"``)."""
    if writes_globally(identity):
        return
    workspace = identity.workspace
    raise AccessDeniedError(
        f"{what} global knowledge (no workspace, no owner), which only admin keys and keys "
        f"without a workspace may write; your key works in workspace {workspace!r}: to change "
        f'what {workspace!r} sees, write an entry with "workspace": "{workspace}" '
        "(it overlays the global one there)"
    )


def check_replaceable(stored: BaseUKF, identity: Identity) -> None:
    """Raise :class:`AccessDeniedError` unless ``identity`` may replace ``stored``, the entry
    (active or not) already stored under the id being written. An entry hidden from the caller
    gets :data:`HIDDEN_ENTRY_MESSAGE`, which does not say that the id exists."""
    try:
        check_writable(stored, identity)
    except AccessDeniedError:
        if identity.role is Role.ADMIN or is_visible(stored, identity.reader):
            raise
        raise AccessDeniedError(HIDDEN_ENTRY_MESSAGE.format(id=stored.id)) from None


def check_writable(entry: BaseUKF, identity: Identity) -> None:
    """Raise :class:`AccessDeniedError` unless ``identity`` may write ``entry`` (as it would be
    stored). The messages name the caller's own input only: ``entry`` is what they sent, or a
    stored entry they can see."""
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
    if layer_of(entry) == GLOBAL_LAYER:
        check_global_writer(identity, f"entry {entry.id} is")
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
