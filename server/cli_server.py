"""``almanac serve`` and ``almanac keys create|list|revoke``.

    almanac serve [--host H] [--port P]      the HTTP API (uvicorn), with the job worker
    almanac keys create --role R --user U [--workspace W] [--group G]... [--label L]
    almanac keys list [--all]
    almanac keys revoke KEY_ID

``keys create`` prints the secret once; only its hash is stored.
"""

from __future__ import annotations

import argparse
from typing import Any

from server.auth import Role
from server.settings import Settings

SERVER_COMMANDS = frozenset({"serve", "keys"})


def add_server_commands(commands: Any) -> None:
    """Add ``serve`` and ``keys`` to the ``almanac`` subparsers."""
    serve = commands.add_parser("serve", help="run the HTTP API (uvicorn) and the job worker")
    serve.add_argument("--host", help="bind address (ALMANAC_HOST)")
    serve.add_argument("--port", type=int, help="port (ALMANAC_PORT)")
    serve.add_argument("--target-url", help="target database URL (ALMANAC_TARGET_URL)")
    keys = commands.add_parser("keys", help="API keys")
    actions = keys.add_subparsers(dest="action", required=True)
    create = actions.add_parser("create", help="create a key; the secret is printed once")
    create.add_argument("--role", required=True, choices=[role.value for role in Role])
    create.add_argument("--user", required=True, help="the user the key acts as")
    create.add_argument("--workspace", help="the workspace whose knowledge the key sees")
    create.add_argument("--group", action="append", default=[], help="a group (repeatable)")
    create.add_argument("--label", default="", help="a note: who holds the key, what for")
    listing = actions.add_parser("list", help="keys (never their secrets)")
    listing.add_argument("--all", action="store_true", help="revoked keys too")
    actions.add_parser("revoke", help="revoke a key").add_argument("key_id")


def run_server_command(args: argparse.Namespace, settings: Settings) -> int:
    """Run ``serve`` or ``keys``; the exit status."""
    if args.command == "serve":
        return _serve(args, settings)
    return _keys(args, settings)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    given = {"host": args.host, "port": args.port, "target_url": args.target_url}
    overrides = {name: value for name, value in given.items() if value is not None}
    return serve_settings(settings.model_copy(update=overrides))


def serve_settings(settings: Settings) -> int:
    """Serve the HTTP API with ``settings`` until interrupted."""
    import uvicorn

    from server.app import create_app
    from server.state import build_state

    app = create_app(build_state(settings))
    print(
        f"Almanac serving {settings.resolved_store_url} on http://{settings.host}:{settings.port}"
    )
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        timeout_graceful_shutdown=15,
    )
    return 0


def _keys(args: argparse.Namespace, settings: Settings) -> int:
    from server.state import open_keys

    store, engine, keys = open_keys(settings)
    try:
        if args.action == "create":
            key, secret = keys.create(
                role=args.role,
                user=args.user,
                workspace=args.workspace,
                groups=args.group,
                label=args.label,
            )
            print(f"created key {key.id} ({key.role}, user {key.user}); its secret, shown once:")
            print(secret)
        elif args.action == "list":
            for key in keys.list(include_revoked=args.all):
                state = "revoked" if key.revoked_at else "active"
                print(
                    f"{key.id}  {key.role:<8} {key.user:<16} workspace={key.workspace or '-'} "
                    f"groups={','.join(key.groups) or '-'} {state} {key.label}"
                )
        else:
            key = keys.revoke(args.key_id)  # KeyNotFoundError: "error: ...", exit 2
            print(f"revoked key {key.id} ({key.role}, user {key.user})")
    finally:
        engine.dispose()
        store.close()
    return 0
