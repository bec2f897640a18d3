"""The ``usenet-indexer`` command: one entry point, a sub-command per role."""

from __future__ import annotations

import gc
import os
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
import typer.core

from usenet_indexer.edge.main import DEFAULT_BATCH_ARTICLES, DEFAULT_IDLE_SECONDS, stop_on_signals
from usenet_indexer.leases.planning import DEFAULT_BACKFILL_DAYS, Backfill, BackfillError
from usenet_indexer.logs import configure_logging
from usenet_indexer.readable import ago
from usenet_indexer.settings import Settings, load_settings, settings_problem

if TYPE_CHECKING:
    from collections.abc import Callable

    from usenet_indexer.coordinator.registries.operations import Done, Operations
    from usenet_indexer.coordinator.wiring import Services

# The store's modules (SQLAlchemy, Alembic) are imported by the commands that use them: an edge worker
# needs none of them, and starts a second sooner without (`run` starts one per core).

# The order a user meets them in: try it, add groups, run, give clients a key; then more machines.
COMMAND_ORDER = (
    "demo",
    "groups",
    "run",
    "users",
    "admin",
    "serve",
    "edge",
    "nodes",
    "rules",
    "reindex",
    "db",
    "sample-server",
)


class OrderedGroup(typer.core.TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:  # typer vendors click; its Context type is private
        names = super().list_commands(ctx)
        return sorted(
            names, key=lambda n: COMMAND_ORDER.index(n) if n in COMMAND_ORDER else len(COMMAND_ORDER)
        )


def command_group(help: str, **options: object) -> typer.Typer:
    """A command group whose help is plain text: legible at 80 columns (rich's panels cut option names
    there: ``--backfill-articl…``)."""
    return typer.Typer(no_args_is_help=True, rich_markup_mode=None, help=help, **options)  # type: ignore[arg-type]


app = command_group("A distributed Usenet binary indexer.", add_completion=False, cls=OrderedGroup)
db_app = command_group("The store: schema migrations.")
nodes_app = command_group("Edge nodes and their tokens.")
groups_app = command_group("Newsgroups to index and their ranges.")
app.add_typer(db_app, name="db")
app.add_typer(nodes_app, name="nodes")
app.add_typer(groups_app, name="groups")
rules_app = command_group("Subject rules: versioned; every change makes a new version.")
app.add_typer(rules_app, name="rules")


@app.callback()
def main_options(
    ctx: typer.Context,
    database_url: Annotated[
        str | None,
        typer.Option(
            envvar="USENET_INDEXER_DATABASE_URL",
            help="postgresql://… or sqlite:///path (default: a SQLite file in the data directory)",
        ),
    ] = None,
    data_dir: Annotated[
        Path | None, typer.Option(envvar="USENET_INDEXER_DATA_DIR", help="Data directory (default ./data)")
    ] = None,
    config: Annotated[
        Path | None, typer.Option(envvar="USENET_INDEXER_CONFIG", help="A TOML settings file")
    ] = None,
    log_format: Annotated[str | None, typer.Option(help="auto, console or json")] = None,
    log_level: Annotated[str | None, typer.Option(help="DEBUG, INFO, WARNING, …")] = None,
) -> None:
    try:
        settings = load_settings(
            config, database_url=database_url, data_dir=data_dir, log_format=log_format, log_level=log_level
        )
    except ValueError as error:  # pydantic's ValidationError is one
        fail(f"settings: {settings_problem(error)}")
    configure_logging(settings.log_level, settings.log_format)
    ctx.obj = settings
    from usenet_indexer.runtime import TUNED_COMMANDS

    if ctx.invoked_subcommand not in TUNED_COMMANDS:
        gc.enable()  # started quietly (runtime.py); this command does not call tune_gc


DATE_FORMATS = ["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]


def settings_of(ctx: typer.Context) -> Settings:
    settings = ctx.find_root().obj
    assert isinstance(settings, Settings)
    return settings


def services_of(ctx: typer.Context) -> Services:
    from usenet_indexer.coordinator.wiring import open_services

    services = open_services(settings_of(ctx))
    ctx.call_on_close(services.close)
    return services


def fail(message: str) -> NoReturn:
    typer.secho(message, err=True, fg=typer.colors.RED)
    raise typer.Exit(1)


def operate(ctx: typer.Context, operation: Callable[[Operations], Done], secret_note: str = "") -> Done:
    """One of the operations the web admin does too (coordinator/registries/operations.py): what it
    did printed, a refusal printed and the command failed. A secret goes alone to stdout (scripts read
    it there), the message to stderr with ``secret_note``."""
    from usenet_indexer.coordinator.registries.operations import Operations, Refused

    try:
        done = operation(Operations.of(services_of(ctx)))
    except Refused as refusal:
        fail(str(refusal))
    if done.secret is None:
        typer.echo(done.message)
    else:
        typer.echo(done.secret)
        typer.echo(f"{done.message}{secret_note}", err=True)
    return done


# -- db ---------------------------------------------------------------------------------------------


@db_app.command("upgrade")
def db_upgrade(ctx: typer.Context) -> None:
    """Apply every migration not yet applied."""
    from usenet_indexer.db.migrate import current, upgrade

    settings = settings_of(ctx)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.database_url, verbose=True)
    typer.echo(f"database at revision {current(settings.database_url)}")


# -- nodes ------------------------------------------------------------------------------------------


@nodes_app.command("add")
def nodes_add(ctx: typer.Context, name: str) -> None:
    """Register a node and print its token (shown once: only a hash is kept)."""
    operate(ctx, lambda ops: ops.add_node(name), "; give it this token as NODE_TOKEN (it is not shown again)")


@nodes_app.command("list")
def nodes_list(ctx: typer.Context) -> None:
    """Nodes, with when each was last seen."""
    from usenet_indexer.coordinator.registries.operations import Operations

    nodes = Operations.of(services_of(ctx)).list_nodes()
    if not nodes:
        typer.echo("no nodes: add one with `usenet-indexer nodes add NAME`")
    for node in nodes:
        seen = ago(None if node.last_seen_at is None else node.now - node.last_seen_at)
        state = "enabled" if node.enabled else "disabled"
        typer.echo(f"{node.name}\t{state}\tlast seen {seen}\t{node.leased} ranges leased")


@nodes_app.command("disable")
def nodes_disable(ctx: typer.Context, name: str) -> None:
    """Refuse the node's token from now on."""
    operate(ctx, lambda ops: ops.enable_node(name, False))


@nodes_app.command("enable")
def nodes_enable(ctx: typer.Context, name: str) -> None:
    """Accept the node's token again."""
    operate(ctx, lambda ops: ops.enable_node(name, True))


# -- groups -----------------------------------------------------------------------------------------


@groups_app.command("add")
def groups_add(
    ctx: typer.Context,
    name: str,
    backfill_articles: Annotated[
        int | None, typer.Option(help="Index the newest N articles of history")
    ] = None,
    backfill_days: Annotated[
        float | None,
        typer.Option(
            help=f"Index articles posted in the last N days (the default: {DEFAULT_BACKFILL_DAYS:g})"
        ),
    ] = None,
    backfill_since: Annotated[
        datetime | None,
        typer.Option(help="Index articles posted since this date (UTC)", formats=DATE_FORMATS),
    ] = None,
    all_history: Annotated[
        bool, typer.Option("--all-history", help="Index all the history the server keeps (often years)")
    ] = False,
    capture: Annotated[bool, typer.Option(help="Keep the group's overview in the corpus")] = False,
) -> None:
    """Add a newsgroup to index: new posts as they come, and history back to the backfill target."""
    try:
        backfill = Backfill.chosen(backfill_articles, backfill_days, backfill_since, all_history=all_history)
    except BackfillError as error:
        fail(str(error))
    operate(ctx, lambda ops: ops.add_group(name, backfill, capture=capture))
    if backfill.days == DEFAULT_BACKFILL_DAYS and backfill_days is None:
        typer.echo(
            f"(the default; for more: `usenet-indexer groups backfill {name} --days 30`, or --all-history)"
        )


@groups_app.command("backfill")
def groups_backfill(
    ctx: typer.Context,
    name: str,
    articles: Annotated[int | None, typer.Option(help="The newest N articles")] = None,
    days: Annotated[float | None, typer.Option(help="Articles posted in the last N days")] = None,
    since: Annotated[
        datetime | None, typer.Option(help="Articles posted since this date (UTC)", formats=DATE_FORMATS)
    ] = None,
    all_history: Annotated[
        bool, typer.Option("--all-history", help="All the history the server keeps (often years)")
    ] = False,
) -> None:
    """Change how far back a group's history goes. Ranges already planned stay; a target further back
    plans more history at the next planning."""
    try:
        backfill = Backfill(articles, days, since)
        if backfill.everything != all_history:
            raise BackfillError("give one of --articles, --days, --since or --all-history")
    except BackfillError as error:
        fail(str(error))
    operate(ctx, lambda ops: ops.set_backfill(name, backfill))


@groups_app.command("list")
def groups_list(ctx: typer.Context) -> None:
    """Groups, with their ranges counted by status."""
    from usenet_indexer.coordinator.registries.operations import Operations

    groups = Operations.of(services_of(ctx)).list_groups()
    if not groups:
        typer.echo("no groups: add one with `usenet-indexer groups add NAME`")
    for g in groups:
        water = "not read yet" if g.high_water is None else f"articles {g.low_water}–{g.high_water}"
        counts = ", ".join(f"{n} {status}" for status, n in sorted(g.ranges.items())) or "no ranges"
        flags = "" if g.enabled else " (disabled)"
        typer.echo(f"{g.name}{flags}\t{water}\t{counts}" + (f"\terror: {g.error}" if g.error else ""))


@groups_app.command("plan")
def groups_plan(
    ctx: typer.Context,
    name: str,
    low: Annotated[int, typer.Option(help="The group's low watermark")],
    high: Annotated[int, typer.Option(help="The group's high watermark")],
) -> None:
    """Plan ranges from watermarks given by hand (the planner loop reads them from the news server)."""
    operate(ctx, lambda ops: ops.plan_group(name, low, high))


@groups_app.command("disable")
def groups_disable(ctx: typer.Context, name: str) -> None:
    """Stop leasing the group's ranges."""
    operate(ctx, lambda ops: ops.enable_group(name, False))


@groups_app.command("enable")
def groups_enable(ctx: typer.Context, name: str) -> None:
    """Lease the group's ranges again."""
    operate(ctx, lambda ops: ops.enable_group(name, True))


@app.command()
def reindex(ctx: typer.Context, group: str) -> None:
    """Index a group's ranges kept in the corpus again (with the current rules), without the news server."""
    from usenet_indexer.coordinator.loops.corpus_fill import reindex as reindex_group
    from usenet_indexer.coordinator.registries.groups import GroupError

    try:
        count = reindex_group(services_of(ctx), group)
    except GroupError as error:
        fail(str(error))
    if count == 0:
        fail(
            f"{group}: no ranges stored in the corpus (only groups added with --capture keep their overview, "
            "and a range is stored once all its chunks are in the corpus)"
        )
    typer.echo(f"{group}: {count} stored ranges planned again; workers index them from the corpus")


# -- rules ------------------------------------------------------------------------------------------


@rules_app.command("list")
def rules_list(ctx: typer.Context) -> None:
    """The rule set versions, and the rules of the current one in the order they are tried."""
    from usenet_indexer.coordinator.registries.operations import Operations

    ops = Operations.of(services_of(ctx))
    for version, note, _, count in ops.rule_versions():
        typer.echo(f"version {version}: {count} rules{f' ({note})' if note else ''}")
    version, rule_set = ops.current_rules()
    typer.echo(f"\ncurrent: version {version}")
    for rule in rule_set.rules:
        scope = f" [groups: {rule.group}]" if rule.group else ""
        typer.echo(f"  {rule.name}{scope}: {rule.subject}")


@rules_app.command("add")
def rules_add(
    ctx: typer.Context,
    name: str,
    pattern: Annotated[
        str, typer.Argument(help="A regex with (?P<name>…) or (?P<file>…), (?P<p>…)(?P<t>…) …")
    ],
    group: Annotated[
        str | None, typer.Option(help="Only for groups whose name fully matches this regex")
    ] = None,
    first: Annotated[bool, typer.Option(help="Try it before every other rule")] = False,
) -> None:
    """Add a rule: the current rules plus this one become the next version."""
    operate(ctx, lambda ops: ops.add_rule(name, pattern, group=group, first=first))


@rules_app.command("remove")
def rules_remove(ctx: typer.Context, name: str) -> None:
    """Remove a rule: the rest become the next version."""
    operate(ctx, lambda ops: ops.remove_rule(name))


@rules_app.command("test")
def rules_test(
    ctx: typer.Context,
    subject: str,
    group: Annotated[str, typer.Option(help="The group the subject was posted in")] = "alt.binaries.test",
) -> None:
    """What the current rules read from SUBJECT."""
    from usenet_indexer.coordinator.registries.operations import Operations, Refused

    try:
        tested = Operations.of(services_of(ctx)).test_rules(subject, group)
    except Refused as refusal:
        fail(str(refusal))
    version, match = tested.version, tested.match
    if match is None:
        typer.echo(f"no rule of version {version} reads this subject")
        raise typer.Exit(1)
    typer.echo(f"rule:       {match.rule} (version {version})")
    typer.echo(f"release:    {match.name}")
    typer.echo(f"file:       {match.file_name} ({match.kind})")
    if match.file_total:
        typer.echo(f"file i/n:   {match.file_index}/{match.file_total}")
    typer.echo(f"part p/t:   {match.part}/{match.part_total}")
    if match.request_id:
        typer.echo(f"request id: {match.request_id}")
    typer.echo(f"obfuscated: {'yes' if match.obfuscated else 'no'}")


# -- users and the admin login (newznab API keys, web UI) --------------------------------------------

users_app = command_group("Users: their API keys, web UI passwords and daily limits.")
admin_app = command_group("The web UI's admin login.")
app.add_typer(users_app, name="users")
app.add_typer(admin_app, name="admin")


@users_app.command("add")
def users_add(
    ctx: typer.Context,
    name: str,
    requests_per_day: Annotated[
        int | None, typer.Option(help="API requests allowed per day (default: no limit)")
    ] = None,
    downloads_per_day: Annotated[
        int | None, typer.Option(help="NZB downloads allowed per day (default: no limit)")
    ] = None,
    password: Annotated[
        bool,
        typer.Option("--password", help="Also ask for a password, to sign in to the web UI's catalog"),
    ] = False,
) -> None:
    """Add a user and print their API key (shown once: only a hash is kept)."""
    secret = ask_password(f"{name}'s web UI password") if password else None
    operate(
        ctx,
        lambda ops: ops.add_user(
            name, requests_per_day=requests_per_day, downloads_per_day=downloads_per_day, password=secret
        ),
        "; this is their API key (it is not shown again)",
    )


@users_app.command("limits")
def users_limits(
    ctx: typer.Context,
    name: str,
    requests_per_day: Annotated[
        int | None, typer.Option(help="API requests allowed per day (left out: no limit)")
    ] = None,
    downloads_per_day: Annotated[
        int | None, typer.Option(help="NZB downloads allowed per day (left out: no limit)")
    ] = None,
) -> None:
    """Set a user's daily limits, both at once (as `users add` does); today's counts are kept."""
    operate(ctx, lambda ops: ops.set_limits(name, requests_per_day, downloads_per_day))


@users_app.command("passwd")
def users_passwd(ctx: typer.Context, name: str) -> None:
    """Set a user's password for the web UI (asked twice; USENET_INDEXER_USER_PASSWORD if set). The
    user's open sessions end."""
    secret = ask_password(f"{name}'s web UI password")
    operate(ctx, lambda ops: ops.set_password(name, secret))


def ask_password(what: str) -> str:
    """A password from USENET_INDEXER_USER_PASSWORD (scripts), or asked twice without echo."""
    given = os.environ.get("USENET_INDEXER_USER_PASSWORD")
    if given:
        return given
    return str(typer.prompt(what, hide_input=True, confirmation_prompt=True))


@users_app.command("list")
def users_list(ctx: typer.Context) -> None:
    """Users, with today's requests and downloads against their limits."""
    from usenet_indexer.coordinator.registries.operations import Operations

    users = Operations.of(services_of(ctx)).list_users()
    if not users:
        typer.echo("no users: add one with `usenet-indexer users add NAME`")
    for u in users:
        state = "enabled" if u.enabled else "disabled"
        requests = "no limit" if u.requests_per_day is None else str(u.requests_per_day)
        downloads = "no limit" if u.downloads_per_day is None else str(u.downloads_per_day)
        seen = ago(None if u.last_seen_at is None else u.now - u.last_seen_at)
        typer.echo(
            f"{u.name}\t{state}\trequests today {u.requests_today}/{requests}"
            f"\tdownloads today {u.downloads_today}/{downloads}\tlast seen {seen}"
        )


@users_app.command("key")
def users_key(ctx: typer.Context, name: str) -> None:
    """Give a user a new API key and print it (shown once); the old key stops working."""
    operate(ctx, lambda ops: ops.new_key(name), " (it is not shown again)")


@users_app.command("disable")
def users_disable(ctx: typer.Context, name: str) -> None:
    """Refuse the user's API key from now on."""
    operate(ctx, lambda ops: ops.enable_user(name, False))


@users_app.command("enable")
def users_enable(ctx: typer.Context, name: str) -> None:
    """Accept the user's API key again."""
    operate(ctx, lambda ops: ops.enable_user(name, True))


@admin_app.command("hash-password")
def admin_hash_password(
    password: Annotated[str, typer.Option(prompt=True, hide_input=True, confirmation_prompt=True)],
) -> None:
    """Print the hash of an admin password, for the setting admin_password_hash."""
    from usenet_indexer.passwords import WeakPassword, check_strength, hash_password

    try:
        typer.echo(hash_password(check_strength(password)))
    except WeakPassword as error:
        fail(str(error))


# -- serve ------------------------------------------------------------------------------------------


HostOption = Annotated[str | None, typer.Option(help="Address to listen on (default 127.0.0.1)")]
PortOption = Annotated[int | None, typer.Option(help="Port to listen on (default 8710; 0 picks a free one)")]
NntpHostOption = Annotated[
    str | None, typer.Option(help="The news server; with it the planner and prefetcher run")
]
NntpPortOption = Annotated[int | None, typer.Option(help="Its port (default 563 with --nntp-ssl, else 119)")]
NntpSslOption = Annotated[
    bool | None, typer.Option("--nntp-ssl/--no-nntp-ssl", help="NNTPS, certificates verified")
]
NntpUserOption = Annotated[str | None, typer.Option(help="AUTHINFO user")]
NntpPasswordOption = Annotated[
    str | None,
    typer.Option(help="AUTHINFO password (visible to `ps`: prefer USENET_INDEXER_NNTP_PASSWORD)"),
]
NntpConnectionsOption = Annotated[int | None, typer.Option(help="Connections the account allows (default 8)")]
TlsCertOption = Annotated[Path | None, typer.Option(help="HTTPS: the certificate (PEM; with --tls-key)")]
TlsKeyOption = Annotated[Path | None, typer.Option(help="HTTPS: its private key (PEM)")]
InsecureHttpOption = Annotated[
    bool | None,
    typer.Option(
        "--insecure-http/--no-insecure-http",
        help="Plain HTTP beyond loopback: only behind a proxy that terminates TLS",
    ),
]


def with_options(ctx: typer.Context, **given: object) -> Settings:
    """The settings with the command's options that were given, validated as a whole (a user without
    a password, a port out of range) like every setting."""
    settings = settings_of(ctx)
    given = {key: value for key, value in given.items() if value is not None}
    if given:
        try:
            settings = Settings.model_validate({**settings.model_dump(), **given})
        except ValueError as error:
            fail(f"settings: {settings_problem(error)}")
        ctx.find_root().obj = settings
    return settings


@app.command()
def serve(
    ctx: typer.Context,
    host: HostOption = None,
    port: PortOption = None,
    nntp_host: NntpHostOption = None,
    nntp_port: NntpPortOption = None,
    nntp_ssl: NntpSslOption = None,
    nntp_user: NntpUserOption = None,
    nntp_password: NntpPasswordOption = None,
    nntp_connections: NntpConnectionsOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    insecure_http: InsecureHttpOption = None,
) -> None:
    """Run the coordinator: its HTTP API and its background loops (with a news server: the planner,
    prefetcher and corpus fill too)."""
    from usenet_indexer.coordinator.http import import_fastapi
    from usenet_indexer.coordinator.http.exposure import ServeError, check_exposure

    import_fastapi()
    from usenet_indexer.coordinator.server import run_server
    from usenet_indexer.storage.blobs import BlobError

    settings = with_options(
        ctx,
        host=host,
        port=port,
        nntp_host=nntp_host,
        nntp_port=nntp_port,
        nntp_ssl=nntp_ssl,
        nntp_user=nntp_user,
        nntp_password=nntp_password,
        nntp_connections=nntp_connections,
        tls_certfile=tls_cert,
        tls_keyfile=tls_key,
        insecure_http=insecure_http,
    )
    try:
        check_exposure(settings)
    except ServeError as error:
        fail(str(error))
    services = services_of(ctx)
    try:
        services.blobs.check()  # a bucket that is not there: said now, not as every chunk's failure
    except BlobError as error:
        fail(f"storage: {error}")
    run_server(services)


ViewOption = Annotated[str, typer.Option(help="auto (live on a terminal, else plain lines), live or plain")]
WorkersOption = Annotated[
    int | None, typer.Option(help="Edge worker processes (default: one per core)", min=1)
]


@app.command()
def run(
    ctx: typer.Context,
    workers: WorkersOption = None,
    host: HostOption = None,
    port: PortOption = None,
    nntp_host: NntpHostOption = None,
    nntp_port: NntpPortOption = None,
    nntp_ssl: NntpSslOption = None,
    nntp_user: NntpUserOption = None,
    nntp_password: NntpPasswordOption = None,
    nntp_connections: NntpConnectionsOption = None,
    insecure_http: InsecureHttpOption = None,
    batch_articles: Annotated[int, typer.Option(help="Articles per batch a worker posts", min=1)] = 500_000,
    exit_when_done: Annotated[
        bool, typer.Option(help="Stop once every group is indexed to its high watermark (scripts, tests)")
    ] = False,
    view: ViewOption = "auto",
    status_seconds: Annotated[float, typer.Option(help="Plain view: a progress line this often")] = 10.0,
) -> None:
    """Run everything on this machine: the coordinator with all its loops and edge workers as child
    processes. Needs a news server, like `serve`. Ctrl-C stops; the next `run` resumes."""
    from usenet_indexer.logs import without_rich

    with without_rich():  # rich stays out of the coordinator unless the live view needs it (logs.py)
        from usenet_indexer.local.run import RunError, RunOptions, early_run, run_settings, run_until_stopped

    if view not in ("auto", "live", "plain"):
        fail(f"--view: auto, live or plain, not {view!r}")
    settings = with_options(
        ctx,
        host=host,
        port=port,
        nntp_host=nntp_host,
        nntp_port=nntp_port,
        nntp_ssl=nntp_ssl,
        nntp_user=nntp_user,
        nntp_password=nntp_password,
        nntp_connections=nntp_connections,
        insecure_http=insecure_http,
    )
    if settings.tls_certfile is not None:
        # Its own workers connect over loopback in plain HTTP; HTTPS for other machines is `serve`'s.
        fail(
            "`run` serves its own workers over loopback: for HTTPS to other machines use `serve` with "
            "--tls-cert and --tls-key and `edge` workers, or a TLS proxy in front (docs/DEPLOY.md)"
        )
    from usenet_indexer.coordinator.http.exposure import ServeError, check_exposure

    try:
        check_exposure(settings)
    except ServeError as error:
        fail(str(error))
    if not settings.news_servers():
        fail(
            "no news server: give one with --nntp-host (and --nntp-port, --nntp-ssl, --nntp-user; the "
            "password in USENET_INDEXER_NNTP_PASSWORD), or try `usenet-indexer demo` with sample data"
        )
    from usenet_indexer.storage.blobs import BlobError

    options = RunOptions(batch_articles=batch_articles)
    if workers is not None:
        options.workers = workers
    settings = run_settings(settings, options.workers)
    ctx.find_root().obj = settings
    try:
        # The workers start while the store is opened and migrated (local/run.py, LocalRun).
        local = early_run(settings, options, view)
    except RunError as error:
        fail(str(error))
    try:
        services = services_of(ctx)
        services.blobs.check()  # a bucket that is not there: said now, not as every chunk's failure
    except BaseException as error:
        local.stop()
        if isinstance(error, BlobError):
            fail(f"storage: {error}")
        raise
    try:
        code = run_until_stopped(
            services,
            options,
            view_mode=view,
            exit_when_done=exit_when_done,
            status_seconds=status_seconds,
            local=local,
        )
    except RunError as error:
        fail(str(error))
    raise typer.Exit(code)


@app.command()
def demo(
    ctx: typer.Context,
    workers: WorkersOption = None,
    port: PortOption = None,
    exit_when_done: Annotated[
        bool, typer.Option(help="Stop once the sample is indexed and the addresses printed (tests)")
    ] = False,
    view: ViewOption = "auto",
    scale: Annotated[
        float, typer.Option(help="Articles in the sample groups, relative to the ~300,000 of the demo")
    ] = 1.0,
    # One batch per demo range (50,000 articles): smaller batches split releases that the coordinator
    # must then merge (2.9 against 2.4 µs of its CPU a header, bench/demo.py); the view still moves
    # every range.
    batch_articles: Annotated[int, typer.Option(help="Articles per batch a worker posts", min=1)] = 50_000,
    live_seconds: Annotated[
        float,
        typer.Option(help="The sample server posts the last tenth of each group over this long (0: none)"),
    ] = 20.0,
) -> None:
    """`run` against a sample news server on loopback (generated postings, not Usenet), in
    DATA_DIR/demo: indexes its groups, prints the web UI, a newznab search URL and an NZB it fetched,
    then serves until Ctrl-C."""
    from usenet_indexer.local.demo import run_demo
    from usenet_indexer.local.run import RunError

    if view not in ("auto", "live", "plain"):
        fail(f"--view: auto, live or plain, not {view!r}")
    if scale <= 0:
        fail(f"--scale must be above 0, not {scale}")
    try:
        code = run_demo(
            settings_of(ctx),
            workers=workers,
            port=port,
            exit_when_done=exit_when_done,
            view_mode=view,
            scale=scale,
            batch_articles=batch_articles,
            live_seconds=live_seconds,
        )
    except RunError as error:
        fail(str(error))
    raise typer.Exit(code)


@app.command("sample-server")
def sample_server(
    port: Annotated[int, typer.Option(help="Port to listen on (0 picks a free one)")] = 11119,
    host: Annotated[str, typer.Option(help="Address to listen on")] = "127.0.0.1",
    scale: Annotated[float, typer.Option(help="Articles, relative to the demo's ~300,000")] = 1.0,
    block_articles: Annotated[
        int, typer.Option(help="Overview stored in blocks of this many articles (match chunk_articles)")
    ] = 20_000,
    live_seconds: Annotated[
        float, typer.Option(help="Post the last tenth of each group over this many seconds (0: all at once)")
    ] = 0.0,
) -> None:
    """Serve the demo's sample groups (generated postings, not Usenet) over NNTP until Ctrl-C; point
    `run --nntp-host 127.0.0.1 --nntp-port PORT` at it."""
    from usenet_indexer.edge.parent import watch_parent
    from usenet_indexer.newsservers.sample_server import SampleFeed, SampleServer, sample_groups

    if scale <= 0:
        fail(f"--scale must be above 0, not {scale}")
    stop = stop_on_signals()
    watch_parent(stop)  # started by `demo`: gone with it
    typer.echo("generating the sample groups …", err=True)
    if live_seconds < 0:
        fail(f"--live-seconds must be >= 0, not {live_seconds}")
    feed = SampleFeed(
        sample_groups(scale), block_articles=block_articles, live_fraction=0.1, live_seconds=live_seconds
    )
    with SampleServer(feed, host=host, port=port) as server:
        for name in feed.groups:
            low, high = feed.watermarks(name)
            count = feed.group(name)[0]  # type: ignore[index]
            typer.echo(f"{name}: {count} articles, {low}-{high}")
        # `demo` reads this line for the port.
        typer.echo(f"sample news server listening on {host}:{server.port} (sample data, not Usenet)")
        stop.wait()


# -- edge -------------------------------------------------------------------------------------------


@app.command()
def edge(
    ctx: typer.Context,
    batch_articles: Annotated[int, typer.Option(help="Articles per posted batch")] = DEFAULT_BATCH_ARTICLES,
    ranges: Annotated[
        int | None, typer.Option(help="Stop after this many ranges (default: keep going)")
    ] = None,
    processes: Annotated[
        int | None,
        typer.Option(help="Worker processes (default EDGE_PROCESSES or 1; 0 = one per core)"),
    ] = None,
    idle_seconds: Annotated[
        float, typer.Option(help="Wait when there is nothing to lease")
    ] = DEFAULT_IDLE_SECONDS,
    lane: Annotated[
        str | None, typer.Option(help="Hold a group lane (history or tail): ranges in order, a window kept")
    ] = None,
    complete_first: Annotated[
        bool,
        typer.Option(
            "--complete-first",
            help="Finish a range's last batch before leasing the next (several workers on few groups)",
        ),
    ] = False,
) -> None:
    """Run an edge worker: lease ranges from the coordinator, index them, post batches.

    Needs only COORDINATOR_URL and NODE_TOKEN in the environment (and COORDINATOR_CA, the certificate of
    an https coordinator whose certificate no public CA signed).
    """
    import os

    from usenet_indexer.edge.main import EdgeFailure, EdgeOptions, check, coordinator_environment, work

    options = EdgeOptions(batch_articles, ranges, idle_seconds, lane, complete_first)
    requested = processes if processes is not None else int(os.environ.get("EDGE_PROCESSES", "1"))
    count = (os.cpu_count() or 1) if requested == 0 else requested
    stop = stop_on_signals()
    try:
        check(options)
        if count <= 1:
            work(options, stop)
            return
        url, token, authority = coordinator_environment()
    except EdgeFailure as failure:
        fail(str(failure))
    from usenet_indexer.edge.client import NodeClient
    from usenet_indexer.edge.parent import watch_parent
    from usenet_indexer.edge.supervisor import GIVE_BACK_RETRIES, supervise

    watch_parent(stop)

    def client_for(slot: int) -> NodeClient:
        # The children share this node's token: the supervisor gives back exactly what the dead
        # child's held-leases file names, never the node's other leases (edge/held.py).
        return NodeClient(url, token, ca_file=authority, retries=GIVE_BACK_RETRIES)

    settings = settings_of(ctx)
    args = options.child_options(settings.log_level, settings.log_format)
    raise typer.Exit(supervise(count, args, stop=stop, until_done=ranges is not None, client_for=client_for))


def main() -> None:
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
