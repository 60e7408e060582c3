"""Who may read which knowledge, and how layers overlay.

Knowledge lives in three layers: **global** (no workspace, no owner), **workspace** (a
``workspace`` and no owner) and **user** (an ``owner``: a private overlay). A reader sees the
global layer, its workspace's layer and its own user layer; an entry with ``auths`` is further
restricted to the users and groups listed there. When the same knowledge (same
:func:`logical_key`) is visible in several layers, the most specific layer wins: user over
workspace over global.

``reader=None`` means system access: everything, no overlay.
"""

from __future__ import annotations

from functools import lru_cache

from sqlalchemy import ColumnElement, Table, and_, exists, false, not_, or_, select, true

from kb import schema
from ukf import BaseUKF, Reader, stable_hash

GLOBAL_LAYER, WORKSPACE_LAYER, USER_LAYER = 0, 1, 2
LOGICAL_FIELDS = ("type", "name", "variant", "collection", "tags")


def layer_of(entry: BaseUKF) -> int:
    if entry.owner is not None:
        return USER_LAYER
    return WORKSPACE_LAYER if entry.workspace is not None else GLOBAL_LAYER


def logical_key(entry: BaseUKF) -> str:
    """What an entry is about, regardless of layer and provenance (overlay and merge key)."""
    return stable_hash({name: getattr(entry, name) for name in LOGICAL_FIELDS})


def is_visible(entry: BaseUKF, reader: Reader | None) -> bool:
    """Python twin of :func:`visible_clause` for entries already in memory."""
    if reader is None:
        return True
    if entry.workspace is not None and entry.workspace != reader.workspace:
        return False
    if entry.owner is not None and entry.owner != reader.user:
        return False
    return not entry.auths or any(a.user in reader.principals for a in entry.auths)


@lru_cache(maxsize=4096)
def visible_clause(table: Table, reader: Reader | None) -> ColumnElement[bool]:
    """SQL condition: rows of ``table`` (an alias of ``ukf_entries``) that ``reader`` sees.

    Cached per (table, reader): clauses are immutable, and building them costs more than
    running the indexed queries they guard."""
    if reader is None:
        return true()
    c = table.c
    in_workspace: ColumnElement[bool] = c.workspace.is_(None)
    if reader.workspace is not None:
        in_workspace = or_(in_workspace, c.workspace == reader.workspace)
    owned = (
        c.owner.is_(None) if reader.user is None else or_(c.owner.is_(None), c.owner == reader.user)
    )
    granted = (
        exists().where(
            schema.auths.c.ukf_id == c.id, schema.auths.c.principal.in_(sorted(reader.principals))
        )
        if reader.principals
        else false()
    )
    return and_(in_workspace, owned, or_(c.has_auths.is_(False), granted))


@lru_cache(maxsize=4096)
def overlay_clause(table: Table, reader: Reader | None) -> ColumnElement[bool]:
    """SQL condition: no more specific visible, active entry shadows the row."""
    if reader is None:
        return true()
    shadow = schema.entries.alias("shadow")
    shadowed = exists(
        select(shadow.c.id).where(
            shadow.c.logical_key == table.c.logical_key,
            shadow.c.layer > table.c.layer,
            shadow.c.inactive.is_(False),
            visible_clause(shadow, reader),
        )
    )
    return not_(shadowed)
