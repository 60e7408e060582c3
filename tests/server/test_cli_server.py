"""``almanac keys create|list|revoke`` on a real store."""

from __future__ import annotations

from server.cli import main
from server.keys import KeyStore, parse_key
from server.settings import Settings
from server.state import open_keys, resolve_pepper


def test_keys_create_list_and_revoke(tmp_path, capsys):
    args = ["--data-dir", str(tmp_path)]
    assert main([*args, "keys", "create", "--role", "ops", "--user", "olga", "--group", "fin"]) == 0
    out = capsys.readouterr().out.splitlines()
    secret = out[-1]
    key_id, _ = parse_key(secret)
    assert out[0].startswith(f"created key {key_id} (ops, user olga)")
    pepper = tmp_path / "secrets" / "api-key-pepper"
    assert pepper.exists() and oct(pepper.stat().st_mode & 0o777) == "0o600"

    store, engine, keys = open_keys(Settings(data_dir=tmp_path))
    try:
        found = keys.verify(secret)
        assert found is not None and found.role == "ops" and found.groups == ("fin",)
        assert resolve_pepper(Settings(data_dir=tmp_path)) == pepper.read_text().strip().encode()
        assert KeyStore(engine, b"not-the-pepper-0123").verify(secret) is None
    finally:
        engine.dispose()
        store.close()

    assert main([*args, "keys", "list"]) == 0
    listed = capsys.readouterr().out
    assert key_id in listed and secret.split("_")[-1] not in listed
    assert main([*args, "keys", "revoke", key_id]) == 0
    assert capsys.readouterr().out.startswith(f"revoked key {key_id}")
    assert main([*args, "keys", "list"]) == 0
    assert key_id not in capsys.readouterr().out
    assert main([*args, "keys", "list", "--all"]) == 0
    assert "revoked" in capsys.readouterr().out
    assert main([*args, "keys", "revoke", "000000000000"]) == 2
    assert "unknown API key id" in capsys.readouterr().err
