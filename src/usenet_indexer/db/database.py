"""The one I/O boundary to the store: transactions running named queries, on PostgreSQL or SQLite.

Rows come back as dicts. A transaction is a context manager; leaving it normally commits, an exception
rolls back. ``write=True`` matters on SQLite only (``BEGIN IMMEDIATE`` takes the write lock up front, so
two writers queue instead of failing half-way with SQLITE_BUSY). PostgreSQL runs at READ COMMITTED:
each statement sees what was committed before it began, which the lease engine relies on.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import unquote, urlparse

from usenet_indexer.db.clock import CLOCK_OFFSET_SETTING, LeaseClock, anchored_clock
from usenet_indexer.db.queries import Dialect, queries
from usenet_indexer.leases.errors import Fenced

Row = dict[str, Any]
Params = Mapping[str, Any] | Sequence[Any] | None
T = TypeVar("T")


# The SQLSTATE a fenced transaction's check raises (sql/postgresql/functions/ownership_hold.v1.sql).
FENCED_SQLSTATE = "UI001"


class RetryableConflict(Exception):
    """A transaction lost a race (serialization failure, deadlock) and may simply be run again."""


def retry_conflicts(call: Callable[[], T], attempts: int = 20) -> T:
    """``call()``, again after a short pause each time it raises RetryableConflict."""
    for attempt in range(attempts):
        try:
            return call()
        except RetryableConflict:
            if attempt == attempts - 1:
                raise
            time.sleep(min(0.02, 0.0002 * 2**attempt))
    raise AssertionError("unreachable")


class StatementHook(Protocol):
    """Test-only: called before every statement a transaction sends (tests/support/interleave.py).

    ``statement`` is the query's name, ``BEGIN``/``COMMIT`` around a transaction, or ``SQL`` for
    literal SQL. Everything the transaction sent before has been executed by the server when it is
    called (the PostgreSQL pipeline is synced first), so a test that holds an actor here holds it at a
    real statement boundary, with the locks taken so far. ``blocked`` is called by SQLite while a
    ``BEGIN IMMEDIATE`` waits for another writer (the only place a SQLite transaction waits), and
    ``unblocked`` once it has the lock."""

    def before(self, statement: str, backend_pid: int | None) -> None: ...

    def blocked(self) -> None: ...

    def unblocked(self) -> None: ...


class Fence(Protocol):
    """A background loop's ownership, checked by each of its writes (leases/ownership.py)."""

    def check(self, tx: Tx) -> None:
        """First thing in a write transaction: raises ``Fenced`` (now or at commit) when not held."""

    def check_alive(self) -> None:
        """Before a write outside the database: raises ``Fenced`` when not held, by the local clock."""

    def epoch(self) -> int | None:
        """The holding's epoch (None: not held). A new one means the work was just claimed: what an
        earlier holder left half done is the new holder's to take back, its writes being fenced."""


class Tx:
    """One open transaction. ``run`` takes a query name from ``sql/`` and returns its rows (SELECT or
    RETURNING); ``execute`` runs one that returns nothing. On PostgreSQL statements are pipelined:
    ``execute`` only queues, and the queue goes out with the next ``run`` or the COMMIT, so a
    transaction costs a round trip per result it waits for, not one per statement.

    Queued statements go through a cursor of their own (``queue``), never the one ``run`` reads: the
    server sends queued results unasked once they fill its output buffer, psycopg makes each the
    current result of the cursor that issued it, and a read on that cursor then returned an earlier
    UPDATE's result as its own, an empty list (a batch's UPDATE ... RETURNING, about once in 20
    ranges in bench/stream.py; tests/integration/db reproduces it with 3,000 queued statements)."""

    def __init__(
        self,
        dialect: Dialect,
        cursor: Any,
        no_result: type[Exception] = LookupError,
        queue: Any = None,
        before: Callable[[str], None] | None = None,
    ) -> None:
        self.dialect: Dialect = dialect
        self._cursor = cursor
        self._queue = cursor if queue is None else queue
        self._queries = queries(dialect)
        self._no_result = no_result  # what fetching a statement without rows raises (psycopg)
        self._before = before  # tests only: the interleaving hook, a moved clock

    def run(self, name: str, params: Params = None) -> list[Row]:
        if self._before is not None:
            self._before(name)
        return self._rows(self._queries[name], params)

    def one(self, name: str, params: Params = None) -> Row | None:
        rows = self.run(name, params)
        return rows[0] if rows else None

    def array(self, values: Sequence[object]) -> object:
        """``values`` as one parameter for a list query: a PostgreSQL array (``= ANY(CAST(:x AS
        type[]))``), JSON text on SQLite (``IN (SELECT value FROM json_each(:x))``)."""
        if self.dialect == "postgresql":
            return array_literal(values)
        return json.dumps(list(values))

    def execute(self, name: str, params: Params = None) -> None:
        if self._before is not None:
            self._before(name)
        self._queue.execute(self._queries[name], params or {})

    def sql(self, sql: str, params: Params = None) -> list[Row]:
        """Literal SQL (tests, the audit's tools); queries by name are ``run``."""
        if self._before is not None:
            self._before("SQL")
        return self._rows(sql, params)

    def _rows(self, sql: str, params: Params) -> list[Row]:
        cursor = self._cursor
        cursor.execute(sql, params or {})
        try:
            rows = cursor.fetchall()
        except self._no_result as error:
            # psycopg's "the last operation didn't produce records" (a statement without a result
            # set) is the only one without a SQLSTATE. Everything else here is the server's error
            # (undefined table or function, permission denied): it was read as "no rows", and a
            # batch was answered 409 "unknown range", so the worker dropped its range (issue 14).
            if getattr(error, "sqlstate", None) is not None:
                raise
            return []
        # Read once: psycopg builds the description's column objects anew on each read (~23 µs for a
        # range row's 24 columns, read twice by every batch before).
        description = cursor.description
        if description is None:
            return []
        names = [column[0] for column in description]
        return [dict(zip(names, row, strict=True)) for row in rows]

    def executemany(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        if rows:
            if self._before is not None:
                self._before(name)
            self._queue.executemany(self._queries[name], rows)


def array_literal(values: Sequence[object]) -> object:
    """``values`` (strings or integers) as a PostgreSQL array's text, which ``CAST(:x AS type[])``
    reads on the server; a list (psycopg's array) for anything else. psycopg dumps a list element by
    element in Python, ~1-2 µs a key: a batch's three lists of keys were ~4 µs of the coordinator's
    CPU a release on PostgreSQL (issue 17, i17-store). This is one join."""
    if not values:
        return "{}"
    if all(type(value) is str for value in values):
        # Every element quoted: commas, braces, spaces and the word NULL are then plain text; a quote
        # or a backslash inside one is escaped (the join holds none but the separators' otherwise).
        joined = '","'.join(values)  # type: ignore[arg-type]
        if "\\" in joined or joined.count('"') != 2 * (len(values) - 1):
            joined = '","'.join(str(v).replace("\\", "\\\\").replace('"', '\\"') for v in values)
        return '{"' + joined + '"}'
    if all(type(value) is int for value in values):
        return "{" + ",".join(map(str, values)) + "}"
    return list(values)


class Database:
    """Base of the two stores; ``url`` is ``postgresql://…`` or ``sqlite:///path``."""

    dialect: Dialect
    url: str
    # Tests only (tests/support/interleave.py): called before every statement; None in production.
    hook: StatementHook | None = None

    def move_clock(self, seconds: float) -> None:
        """Tests only: move the database's clock (what ``{now}`` reads) by ``seconds``, for every
        transaction of this process, open ones included: a lease expires without sleeping its TTL."""
        raise NotImplementedError

    def now(self) -> float:
        """The database's clock (Unix seconds): the one every lease is measured by."""
        with self.transaction(write=False) as tx:
            row = tx.one("database_now")
        assert row is not None
        return float(row["now"])

    @contextmanager
    def transaction(
        self, *, write: bool = True, durable: bool = True, fence: Fence | None = None
    ) -> Iterator[Tx]:
        """``durable=False`` lets PostgreSQL acknowledge the commit before its WAL reaches the disk:
        for writes whose loss in a crash is harmless (a heartbeat), never for grants or batches.
        ``fence``: a background loop's, checked first (its writes go through only while it holds
        its ownership lease)."""
        with self._transaction(write=write, durable=durable) as tx:
            if fence is not None:
                fence.check(tx)
            yield tx

    @contextmanager
    def _transaction(self, *, write: bool, durable: bool) -> Iterator[Tx]:
        raise NotImplementedError
        yield  # pragma: no cover

    def retrying(
        self,
        work: Callable[[Tx], T],
        *,
        attempts: int = 20,
        durable: bool = True,
        fence: Fence | None = None,
    ) -> T:
        """Run ``work`` in a transaction, again from the start when it lost a race to another one."""

        def attempt() -> T:
            with self.transaction(durable=durable, fence=fence) as tx:
                return work(tx)

        return retry_conflicts(attempt, attempts)

    def once(self, name: str, params: Params = None, *, durable: bool = True) -> list[Row]:
        """One statement as its own transaction (on PostgreSQL in a single round trip)."""
        with self.transaction(durable=durable) as tx:
            return tx.run(name, params)

    def close(self) -> None:
        raise NotImplementedError


class PostgresDatabase(Database):
    dialect: Dialect = "postgresql"

    def __init__(self, url: str, *, max_connections: int = 20) -> None:
        import psycopg
        from psycopg_pool import ConnectionPool

        self.url = url
        self._psycopg = psycopg
        self._once_sql: dict[tuple[str, bool], str] = {}
        self._clock_moved = 0.0
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_connections,
            # Prepared at first use: planning the lease pick costs more than running it.
            kwargs={"autocommit": True, "prepare_threshold": 0},
            open=True,
            name="usenet-indexer",
        )

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection; whatever goes wrong, it goes back out of any transaction, and a lost
        race comes out as RetryableConflict."""
        errors = self._psycopg.errors
        idle = self._psycopg.pq.TransactionStatus.IDLE
        with self._pool.connection() as conn:
            try:
                yield conn
            except BaseException as error:
                if not conn.closed and conn.info.transaction_status != idle:
                    # psycopg's rollback, not a ROLLBACK statement: it also forgets the statements it
                    # prepared, whose PREPARE an aborted pipeline may have skipped ("prepared
                    # statement _pg3_0 does not exist" on the next use otherwise). A broken
                    # connection cannot roll back; the pool discards it on return.
                    with suppress(errors.Error):
                        conn.rollback()
                if isinstance(error, errors.SerializationFailure | errors.DeadlockDetected):
                    raise RetryableConflict(str(error)) from error
                if getattr(error, "sqlstate", None) == FENCED_SQLSTATE:
                    raise Fenced(
                        getattr(getattr(error, "diag", None), "message_primary", None) or str(error)
                    ) from error
                raise

    @staticmethod
    def _begin(cursor: Any, durable: bool) -> None:
        cursor.execute("BEGIN")
        if not durable:
            cursor.execute("SET LOCAL synchronous_commit TO off")

    def move_clock(self, seconds: float) -> None:
        self._clock_moved += seconds

    def _testing(self, conn: Any, pipeline: Any, queue: Any) -> Callable[[str], None] | None:
        """Before each statement, in tests only: the moved clock set on the session (every ``{now}``
        reads it, see queries.py), then the interleaving hook at a synced statement boundary."""
        hook, moved = self.hook, self._clock_moved
        if hook is None and not moved:
            return None
        pid = conn.info.backend_pid

        def before(statement: str) -> None:
            if hook is not None:
                pipeline.sync()
                hook.before(statement, pid)
            if self._clock_moved:  # read after the hook: the test may have moved it meanwhile
                queue.execute(
                    "SELECT set_config(%(name)s, %(value)s, false)",
                    {"name": CLOCK_OFFSET_SETTING, "value": repr(self._clock_moved)},
                )

        return before

    @contextmanager
    def _transaction(self, *, write: bool, durable: bool) -> Iterator[Tx]:
        # Leaving the pipeline waits for everything queued, COMMIT included.
        with (
            self._connection() as conn,
            conn.pipeline() as pipeline,
            conn.cursor() as cursor,
            conn.cursor() as queue,
        ):
            before = self._testing(conn, pipeline, queue)
            if before is not None:
                before("BEGIN")
            self._begin(queue, durable)
            yield Tx("postgresql", cursor, self._psycopg.ProgrammingError, queue, before)
            if before is not None:
                before("COMMIT")
            queue.execute("COMMIT")

    def once(self, name: str, params: Params = None, *, durable: bool = True) -> list[Row]:
        # BEGIN, the statement and COMMIT as one simple-protocol query with the parameters bound
        # here: one round trip and one result to read, where pipelining the same three cost eight
        # waits on the socket (measured: ~2 ms a heartbeat under load, Python time mostly in psycopg's
        # wait loop). The statement is not prepared, so the two that use this path call PL/pgSQL
        # functions (lease_take, range_heartbeat), whose queries' plans are cached per session: the
        # heartbeat as a plain statement spent ~0.10 ms planning beside ~0.09 running (EXPLAIN ANALYZE).
        text = self._once_sql.get((name, durable))
        if text is None:
            head = "BEGIN; " if durable else "BEGIN; SET LOCAL synchronous_commit TO off; "
            text = self._once_sql[(name, durable)] = f"{head}{queries('postgresql')[name]}; COMMIT"
        skip = 1 if durable else 2  # the results of BEGIN (and SET) before the statement's
        with self._connection() as conn, self._psycopg.ClientCursor(conn) as cursor:
            if self.hook is not None or self._clock_moved:  # tests only
                if self.hook is not None:
                    self.hook.before(name, conn.info.backend_pid)
                cursor.execute(
                    "SELECT set_config(%(name)s, %(value)s, false)",
                    {"name": CLOCK_OFFSET_SETTING, "value": repr(self._clock_moved)},
                )
            cursor.execute(text, params or {})
            for _ in range(skip):
                cursor.nextset()
            description = cursor.description  # read once, as in Tx._rows
            if description is None:
                return []
            names = [column[0] for column in description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def close(self) -> None:
        self._pool.close()


class SqliteDatabase(Database):
    """SQLite in WAL mode, one connection per thread (sqlite3 connections are not shared)."""

    dialect: Dialect = "sqlite"

    def __init__(self, url: str, *, clock: LeaseClock | None = None) -> None:
        self.url = url
        self.path = sqlite_path(url)
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # WAL is a property of the file: set once, here, before threads race to set it (switching the
        # journal mode needs an exclusive lock, and a busy one fails at once instead of waiting).
        with closing(sqlite3.connect(self.path, timeout=60.0)) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            self.clock = clock if clock is not None else anchored_clock(conn)

    def move_clock(self, seconds: float) -> None:
        self.clock.move(seconds)

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=60.0, check_same_thread=False)
            # SQLite has no server: the lease clock is this machine's, anchored in the file (db/clock.py).
            conn.create_function("unix_now", 0, self.clock.now)
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=60000")
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _begin(self, conn: sqlite3.Connection, cursor: sqlite3.Cursor, write: bool) -> None:
        hook = self.hook
        if hook is None:
            cursor.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            return
        # Tests only: wait for the write lock here, telling the hook while we do, instead of inside
        # SQLite's busy handler, so that an interleaving test knows this actor is blocked.
        hook.before("BEGIN", None)
        if not write:
            cursor.execute("BEGIN")
            return
        conn.execute("PRAGMA busy_timeout=0")
        try:
            while True:
                try:
                    cursor.execute("BEGIN IMMEDIATE")
                    hook.unblocked()
                    return
                except sqlite3.OperationalError as error:
                    if "locked" not in str(error) and "busy" not in str(error):
                        raise
                    hook.blocked()
                    time.sleep(0.001)
        finally:
            conn.execute("PRAGMA busy_timeout=60000")

    @contextmanager
    def _transaction(self, *, write: bool, durable: bool) -> Iterator[Tx]:
        conn = self._connection()
        cursor = conn.cursor()
        # A reader in WAL mode sees one snapshot for the whole transaction; a writer takes the lock first.
        self._begin(conn, cursor, write)
        hook = self.hook
        before = None if hook is None else (lambda statement: hook.before(statement, None))
        try:
            yield Tx("sqlite", cursor, before=before)
            if before is not None:
                before("COMMIT")
        except BaseException:
            if conn.in_transaction:
                cursor.execute("ROLLBACK")
            cursor.close()
            raise
        cursor.execute("COMMIT")
        cursor.close()

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


def redacted(url: str) -> str:
    """A database URL fit for a log line: the password replaced (here, not with the server: `run` shows
    it before it imports the web stack)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def sqlite_path(url: str) -> str:
    parsed = urlparse(url)
    if parsed.scheme != "sqlite":
        raise ValueError(f"not a sqlite URL: {url}")
    # sqlite:///relative/path and sqlite:////absolute/path, as SQLAlchemy spells them.
    path = unquote(url[len("sqlite:///") :])
    if not path:
        raise ValueError("sqlite URL names no file: use sqlite:///path/to/file.db")
    return path


def connect(url: str, *, max_connections: int = 20) -> Database:
    scheme = urlparse(url).scheme
    if scheme in ("postgresql", "postgres"):
        return PostgresDatabase(url, max_connections=max_connections)
    if scheme == "sqlite":
        Path(sqlite_path(url)).parent.mkdir(parents=True, exist_ok=True)
        return SqliteDatabase(url)
    raise ValueError(f"unsupported database URL {url!r}: use postgresql://… or sqlite:///path")
