"""Administration: API keys (``/v1/keys``, role ``admin``) and the audit log (``/v1/audit``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, model_validator

from server.auth import Identity, Permission, Role
from server.deps import get_state, require
from server.keys import expiry
from server.responses import FastJSONResponse

router = APIRouter(prefix="/v1", tags=["admin"])
Admin = Annotated[Identity, Depends(require(Permission.KEYS))]
Auditor = Annotated[Identity, Depends(require(Permission.AUDIT))]


class KeyRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role
    user: str = Field(min_length=1, max_length=256)
    workspace: str | None = Field(default=None, max_length=256)
    groups: list[str] = Field(default_factory=list)
    label: str = Field(default="", max_length=500)
    expires_at: datetime | None = Field(
        default=None, description="when the key stops working (ISO 8601; no offset: UTC)"
    )
    expires_in_days: float | None = Field(
        default=None, gt=0, le=36500, description="or: this many days from now"
    )

    @model_validator(mode="after")
    def _one_expiry(self) -> Self:
        expiry(expires_at=self.expires_at, expires_in_days=self.expires_in_days)  # ValueError: 422
        return self


@router.post("/keys", status_code=201, summary="Create an API key (the secret is shown once)")
def create_key(request: Request, identity: Admin, body: KeyRequest) -> Response:
    try:
        expires_at = expiry(expires_at=body.expires_at, expires_in_days=body.expires_in_days)
        key, secret = get_state(request).keys.create(
            role=body.role.value,
            user=body.user,
            workspace=body.workspace,
            groups=body.groups,
            label=body.label,
            created_by=identity.key_id,
            expires_at=expires_at,
        )
    except ValueError as exc:  # the expiry passed since the request was validated
        raise HTTPException(422, str(exc)) from exc
    return FastJSONResponse({**key.to_dict(), "key": secret}, status_code=201)


@router.get("/keys", summary="API keys (never their secrets)")
def list_keys(request: Request, _identity: Admin, include_revoked: bool = False) -> Response:
    keys = get_state(request).keys.list(include_revoked=include_revoked)
    return FastJSONResponse({"items": [key.to_dict() for key in keys], "count": len(keys)})


@router.delete("/keys/{key_id}", summary="Revoke an API key")
def revoke_key(request: Request, _identity: Admin, key_id: str) -> Response:
    state = get_state(request)
    key = state.keys.revoke(key_id)
    state.auth.forget(key_id)
    return FastJSONResponse(key.to_dict())


@router.get("/audit", summary="Knowledge writes, newest first")
def list_audit(
    request: Request,
    _identity: Auditor,
    ukf_id: str | None = None,
    action: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    records = get_state(request).audit.list(ukf_id=ukf_id, action=action, limit=limit)
    return FastJSONResponse(
        {"items": [record.to_dict() for record in records], "count": len(records)}
    )
