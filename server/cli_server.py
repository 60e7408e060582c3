"""``almanac serve`` and ``almanac keys create|list|revoke``.

    almanac serve [--host H] [--port P]      the HTTP API (uvicorn), with the job worker
    almanac keys create --role R --user U [--workspace W] [--group G]... [--label L]
                        [--expires-in-days N | --expires-at ISO]
    almanac keys list [--all]
    almanac keys revoke KEY_ID

``keys create`` prints the secret once; only its hash is stored. A key made with an expiry
is refused from that time on (``keys list`` shows it as expired). ``serve`` prints a line per
warm-up component as it settles and one when the server is ready (:func:`announce_readiness`).
"""

from __future__ import annotations

import argparse
import contextlib
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from server.auth import Role
from server.keys import expiry
from server.readiness import INDICES, MODEL_PREFIX, PREFILL, Component, Phase, Readiness, overall_of
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
    lifetime = create.add_mutually_exclusive_group()
    lifetime.add_argument(
        "--expires-in-days", type=_positive_days, metavar="N", help="the key expires in N days"
    )
    lifetime.add_argument(
        "--expires-at",
        type=_future_time,
        metavar="ISO",
        help="the key expires at this time (ISO 8601, e.g. 2027-01-31T18:00+01:00; no offset: UTC)",
    )
    listing = actions.add_parser("list", help="keys (never their secrets)")
    listing.add_argument("--all", action="store_true", help="revoked keys too")
    actions.add_parser("revoke", help="revoke a key").add_argument("key_id")


def _positive_days(value: str) -> float:
    try:
        days = float(value)
        expiry(expires_in_days=days)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: a positive number of days ({exc})") from exc
    return days


def _future_time(value: str) -> datetime:
    try:
        when = expiry(expires_at=datetime.fromisoformat(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{value!r}: a future ISO 8601 time ({exc})") from exc
    assert when is not None
    return when


def _expiry_text(expires_at: datetime | None) -> str:
    return expires_at.astimezone(UTC).isoformat(timespec="seconds") if expires_at else "never"


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

    state = build_state(settings)
    app = create_app(state)
    base = f"http://{settings.host}:{settings.port}"
    print(f"Almanac serving {settings.resolved_store_url} on {base}", flush=True)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level.lower(),
        access_log=False,
        timeout_graceful_shutdown=15,
    )
    listening = threading.Event()
    server = _announcing_server(config, listening)
    threading.Thread(
        target=announce_readiness,
        args=(state.readiness, base, listening),
        name="almanac-announce",
        daemon=True,
    ).start()
    with contextlib.suppress(KeyboardInterrupt):  # as uvicorn.run: a second Ctrl-C
        server.run()
    return 0 if server.started else 3


def _announcing_server(config: Any, listening: threading.Event) -> Any:
    """uvicorn's server, setting ``listening`` once its socket is bound."""
    import uvicorn

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                listening.set()

    return AnnouncingServer(config)


def announce_readiness(
    readiness: Readiness,
    base: str,
    listening: threading.Event,
    out: Callable[[str], None] = lambda line: print(line, flush=True),
) -> None:
    """Say what the warm-up waits for, a line per component as it settles, and one when
    every component has settled and the server listens (ready, or degraded). Driven by the
    readiness's changes; returns after the last line."""
    said: dict[str, Phase] = {}
    version = readiness.wait_changed(0)
    components = readiness.components()
    if pending := [c for c in components if not c.phase.settled]:
        names = ", ".join(_label(c.name) for c in pending)
        out(f"Almanac is warming up: {names} (a question asked meanwhile waits for them)")
    while True:
        for component in components:
            if component.phase.settled and said.get(component.name) is not component.phase:
                said[component.name] = component.phase
                out(f"Almanac: {_settled_line(component)}")
        if components and all(c.phase.settled for c in components):
            break
        version = readiness.wait_changed(version)
        components = readiness.components()
    listening.wait()
    out(_final_line(components, base))


def _label(name: str) -> str:
    if name == PREFILL:
        return "prompt prefill"
    if name.startswith(MODEL_PREFIX):
        return f"model {name.removeprefix(MODEL_PREFIX)}"
    return name


def _settled_line(component: Component) -> str:
    when = f"{component.after_s:.0f} s after start"
    if component.phase is Phase.FAILED:
        return f"{_label(component.name)} failed ({when}): {component.detail}"
    if component.phase is Phase.SKIPPED:
        return f"{_label(component.name)} skipped ({when}): {component.detail}"
    done = {INDICES: "built", PREFILL: "done"}.get(component.name, "loaded")
    return f"{_label(component.name)} {done} ({when})"


def _final_line(components: Sequence[Component], base: str) -> str:
    after = max(c.after_s for c in components)
    if overall_of(components) == "degraded":
        failed = [_label(c.name) for c in components if c.phase is Phase.FAILED]
        return (
            f"Almanac is up on {base} but degraded: {', '.join(failed)} failed "
            f"({after:.0f} s after start; see /v1/health)"
        )
    return f"Almanac is ready on {base} ({_warm_summary(components)}, {after:.0f} s after start)"


def _warm_summary(components: Sequence[Component]) -> str:
    """What is warm: "indices, models and prompt prefill warm", "indices built", ..."""
    phases = {c.name: c.phase for c in components}
    models = any(name.startswith(MODEL_PREFIX) for name in phases)
    if not models:
        return "indices built"
    if phases.get(PREFILL) is Phase.READY:
        return "indices, models and prompt prefill warm"
    return f"indices and models warm, prompt prefill {phases.get(PREFILL, Phase.SKIPPED).value}"


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
                expires_at=args.expires_at or expiry(expires_in_days=args.expires_in_days),
            )
            until = f", expires {_expiry_text(key.expires_at)}" if key.expires_at else ""
            print(
                f"created key {key.id} ({key.role}, user {key.user}{until}); "
                "its secret, shown once:"
            )
            print(secret)
        elif args.action == "list":
            for key in keys.list(include_revoked=args.all):
                state = "revoked" if key.revoked_at else "expired" if key.expired else "active"
                print(
                    f"{key.id}  {key.role:<8} {key.user:<16} workspace={key.workspace or '-'} "
                    f"groups={','.join(key.groups) or '-'} "
                    f"expires={_expiry_text(key.expires_at)} {state} {key.label}"
                )
        else:
            key = keys.revoke(args.key_id)  # KeyNotFoundError: "error: ...", exit 2
            print(f"revoked key {key.id} ({key.role}, user {key.user})")
    finally:
        engine.dispose()
        store.close()
    return 0
