"""API keys that expire: the key table, the authenticator's cache, the 401's detail, the
``/v1/keys`` API and ``almanac keys`` (issue 27: an expired key is refused with a clear message).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, create_engine, update

from kb import schema
from kb.store import KnowledgeStore
from server.auth import REFUSED, Authenticator
from server.cli import main
from server.keys import ExpiryInPastError, KeyExpiredError, KeyStore, expiry, parse_key
from tests.support.clock import move_key_clock_on

PEPPER = b"expiry-test-pepper-0123456789abc"


def _expire(engine: Engine, key_id: str, at: datetime) -> None:
    """Set a key's expiry in the database (as if it had been made with it, long ago)."""
    with engine.begin() as conn:
        conn.execute(
            update(schema.api_keys).where(schema.api_keys.c.id == key_id).values(expires_at=at)
        )


@pytest.fixture()
def keys(store_url) -> Iterator[KeyStore]:
    KnowledgeStore(store_url).close()
    engine = create_engine(store_url)
    yield KeyStore(engine, PEPPER)
    engine.dispose()


def test_an_expiry_is_one_future_time(keys):
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    assert expiry(now=now) is None
    assert expiry(expires_in_days=1.5, now=now) == now + timedelta(days=1.5)
    naive = datetime(2026, 6, 2, 8, 30)
    assert expiry(expires_at=naive, now=now) == naive.replace(tzinfo=UTC)
    paris = datetime.fromisoformat("2026-06-02T10:00+02:00")
    assert expiry(expires_at=paris, now=now) == datetime(2026, 6, 2, 8, tzinfo=UTC)
    with pytest.raises(ValueError, match="not both"):
        expiry(expires_at=paris, expires_in_days=1, now=now)
    for days in (0, -2, float("nan")):
        with pytest.raises(ValueError, match="positive"):
            expiry(expires_in_days=days, now=now)
    with pytest.raises(ValueError, match="too far"):
        expiry(expires_in_days=float("inf"), now=now)
    with pytest.raises(ExpiryInPastError, match="2026-06-01T11:00:00"):
        expiry(expires_at=now - timedelta(hours=1), now=now)
    with pytest.raises(ExpiryInPastError):
        keys.create(role="analyst", user="ana", expires_at=datetime.now(UTC))
    assert keys.list() == []  # nothing stored for a refused expiry


def test_an_expired_key_is_refused_and_only_its_holder_learns_why(keys):
    later = datetime.now(UTC) + timedelta(days=2)
    key, secret = keys.create(role="analyst", user="ana", expires_at=later)
    assert key.expires_at == later and key.active and not key.expired
    shown = key.to_dict()
    assert shown["expires_at"] == later and shown["expired"] is False and shown["active"] is True
    assert keys.verify(secret) is not None

    past = datetime.now(UTC) - timedelta(minutes=1)
    _expire(keys._engine, key.id, past)
    stored = keys.get(key.id)
    assert stored.expired and not stored.active and stored.to_dict()["expired"] is True
    assert keys.verify(secret) is None
    with pytest.raises(KeyExpiredError, match="API key expired at") as raised:
        keys.authenticate(secret)
    assert raised.value.key_id == key.id
    assert abs((raised.value.expires_at - past).total_seconds()) < 1e-3
    # a wrong secret for the same id, or an unknown id, learns nothing about the expiry
    key_id, _ = parse_key(secret) or ("", "")
    assert keys.authenticate(f"alm_{key_id}_{'x' * 43}") is None
    assert keys.authenticate(f"alm_{'0' * 12}_{'x' * 43}") is None
    # an expired key is still listed (with its expiry) until it is revoked
    assert [k.id for k in keys.list()] == [key.id]
    keys.revoke(key.id)
    assert keys.authenticate(secret) is None  # revoked: said as before
    assert keys.list() == []


def test_a_cached_identity_does_not_outlive_its_keys_expiry(keys, monkeypatch):
    soon = datetime.now(UTC) + timedelta(minutes=10)
    _, secret = keys.create(role="ops", user="olga", expires_at=soon)
    authenticator = Authenticator(keys, cache_s=3600)
    assert authenticator.identify(secret) is not None
    assert authenticator.cached(secret) is not None
    move_key_clock_on(monkeypatch, timedelta(minutes=11))
    assert authenticator.cached(secret) is None, "the cache trusted a key past its expiry"
    assert authenticator.identify(secret) is None
    assert authenticator.refusal(secret).startswith("API key expired at ")
    assert authenticator.refusal(secret[:-4] + "abcd") == REFUSED
    assert authenticator.refusal("alm_garbage") == REFUSED


def test_the_api_makes_and_lists_keys_that_expire(server):
    before = datetime.now(UTC)
    made = server.request(
        "POST", "/v1/keys", "admin", json={"role": "analyst", "user": "ana", "expires_in_days": 7}
    )
    assert made.status_code == 201, made.text
    expires = datetime.fromisoformat(made.json()["expires_at"])
    assert timedelta(days=7) <= expires - before < timedelta(days=7, minutes=1)
    assert made.json()["expired"] is False
    assert server.request("GET", "/v1/me", made.json()["key"]).status_code == 200

    at = "2099-01-31T18:00:00+01:00"
    fixed = server.request(
        "POST", "/v1/keys", "admin", json={"role": "ops", "user": "olga", "expires_at": at}
    )
    assert fixed.status_code == 201, fixed.text
    assert datetime.fromisoformat(fixed.json()["expires_at"]) == datetime.fromisoformat(at)
    listed = {k["user"]: k for k in server.request("GET", "/v1/keys", "admin").json()["items"]}
    assert datetime.fromisoformat(listed["olga"]["expires_at"]) == datetime.fromisoformat(at)
    assert listed["ana"]["expired"] is False and listed["admin"]["expires_at"] is None

    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    bad = [
        {"expires_at": past},
        {"expires_in_days": 0},
        {"expires_in_days": -1},
        {"expires_in_days": 1, "expires_at": at},
        {"expires_at": "next tuesday"},
    ]
    for extra in bad:
        refused = server.request(
            "POST", "/v1/keys", "admin", json={"role": "ml", "user": "mo", **extra}
        )
        assert refused.status_code == 422, (extra, refused.text)
    assert "not in the future" in str(
        server.request(
            "POST", "/v1/keys", "admin", json={"role": "ml", "user": "mo", "expires_at": past}
        ).json()
    )
    users = [k["user"] for k in server.request("GET", "/v1/keys", "admin").json()["items"]]
    assert "mo" not in users


def test_an_expired_key_gets_a_401_that_says_so(server, monkeypatch):
    monkeypatch.setattr(server.state.auth, "cache_s", 3600.0)  # the tests' servers cache nothing
    soon = datetime.now(UTC) + timedelta(minutes=10)
    secret = server.key("analyst", "ana", expires_at=soon)
    assert server.request("GET", "/v1/me", secret).status_code == 200
    assert server.state.auth.cached(secret) is not None  # trusted for an hour, but:
    move_key_clock_on(monkeypatch, timedelta(minutes=11))  # not a sleep: a loaded machine is slow
    assert server.state.auth.cached(secret) is None
    refused = server.request("GET", "/v1/me", secret)
    assert refused.status_code == 401
    detail = refused.json()["detail"]
    assert detail.startswith("API key expired at ") and soon.isoformat()[:19] in detail
    assert refused.headers["www-authenticate"].startswith("Bearer")
    wrong = server.request("GET", "/v1/me", secret[:-4] + "abcd")
    unknown = server.request("GET", "/v1/me", f"alm_{'0' * 12}_{'x' * 43}")
    assert wrong.json()["detail"] == unknown.json()["detail"] == REFUSED
    key_id = next(k.id for k in server.state.keys.list() if k.user == "ana")
    assert server.request("DELETE", f"/v1/keys/{key_id}", "admin").status_code == 200
    assert server.request("GET", "/v1/me", secret).json()["detail"] == REFUSED


def test_almanac_keys_create_and_list_show_expiry(tmp_path, capsys):
    args = ["--data-dir", str(tmp_path)]
    create = [*args, "keys", "create", "--role"]
    assert main([*create, "ops", "--user", "olga", "--expires-in-days", "30"]) == 0
    assert "expires 20" in capsys.readouterr().out
    at = "2099-05-01T09:00+02:00"
    assert main([*create, "analyst", "--user", "ana", "--expires-at", at]) == 0
    assert "expires 2099-05-01T07:00:00+00:00" in capsys.readouterr().out
    assert main([*args, "keys", "create", "--role", "ml", "--user", "mo"]) == 0
    capsys.readouterr()
    assert main([*args, "keys", "list"]) == 0
    lines = {line.split()[2]: line for line in capsys.readouterr().out.splitlines()}
    assert "expires=2099-05-01T07:00:00+00:00 active" in lines["ana"]
    assert "expires=never active" in lines["mo"] and "expires=20" in lines["olga"]

    for wrong in (
        ["--expires-in-days", "0"],
        ["--expires-in-days", "soon"],
        ["--expires-at", "2001-01-01"],
        ["--expires-at", "2099-01-01", "--expires-in-days", "3"],
    ):
        with pytest.raises(SystemExit) as exited:
            main([*create, "ml", "--user", "x", *wrong])
        assert exited.value.code == 2, wrong
        assert "expires" in capsys.readouterr().err

    from server.settings import Settings
    from server.state import open_keys

    store, engine, keys = open_keys(Settings(data_dir=tmp_path))
    try:
        olga = next(k for k in keys.list() if k.user == "olga")
        _expire(engine, olga.id, datetime.now(UTC) - timedelta(days=1))
    finally:
        engine.dispose()
        store.close()
    assert main([*args, "keys", "list"]) == 0
    olga_line = next(line for line in capsys.readouterr().out.splitlines() if "olga" in line)
    assert " expired " in olga_line
