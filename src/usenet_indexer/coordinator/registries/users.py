"""Users of the newznab API: named, each with an API key of which only a hash is kept, and optional
daily limits on requests and NZB downloads, counted per UTC day of the database's clock. A user may
have a password too, to sign in to the web UI, where the same limits apply."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from functools import cache

from usenet_indexer.db import Database
from usenet_indexer.passwords import (
    WeakPassword,
    check_strength,
    hash_password,
    verify_password,
)

USER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@\-]{0,63}$")
API_KEY = re.compile(r"^[0-9a-f]{32}$")


class UserError(ValueError):
    pass


class BadKey(Exception):
    """No key, a key that names no user, or a disabled user's (newznab error 100)."""


class LimitReached(Exception):
    """The day's requests (newznab 500) or downloads (501) are used up."""

    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} limit of {limit} per day reached")
        self.what = what
        self.limit = limit


@dataclass(frozen=True, slots=True)
class ApiUser:
    id: int
    name: str
    requests_per_day: int | None
    downloads_per_day: int | None


@dataclass(frozen=True, slots=True)
class Usage:
    """A user's day so far, with the limits (None: none)."""

    requests: int
    requests_max: int | None
    downloads: int
    downloads_max: int | None

    @property
    def limited(self) -> bool:
        return self.requests_max is not None or self.downloads_max is not None


@dataclass(frozen=True, slots=True)
class UserInfo:
    id: int
    name: str
    enabled: bool
    requests_per_day: int | None
    downloads_per_day: int | None
    requests_today: int
    downloads_today: int
    created_at: float
    last_seen_at: float | None
    now: float


@cache
def _no_password() -> str:
    """What a missing user's password is checked against (made once, when first needed)."""
    return hash_password(secrets.token_urlsafe(16))


def _password_hash(name: str, password: str) -> str:
    try:
        return hash_password(check_strength(password, f"{name}'s password"))
    except WeakPassword as error:
        raise UserError(str(error)) from None


def hash_key(key: str) -> str:
    # Keys are 128 random bits: a plain SHA-256 is enough (there is no dictionary to slow down).
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


# Limits a user may be given: the API counts in 32-bit integers.
MAX_LIMIT = 2**31 - 1


def _limit(value: int | None, flag: str) -> int | None:
    if value is not None and not 0 <= value <= MAX_LIMIT:
        raise UserError(f"{flag} is a count from 0 to {MAX_LIMIT:,} (or none for no limit), not {value}")
    return value


class Users:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(
        self,
        name: str,
        *,
        requests_per_day: int | None = None,
        downloads_per_day: int | None = None,
        password: str | None = None,
    ) -> tuple[int, str]:
        """A new user and their API key; the key is shown once and never stored. With ``password``,
        the user can sign in to the web UI too."""
        if not USER_NAME.match(name):
            raise UserError(f"not a user name: {name!r} (up to 64 letters, digits, . _ @ -)")
        params = {
            "name": name,
            "requests_per_day": _limit(requests_per_day, "--requests-per-day"),
            "downloads_per_day": _limit(downloads_per_day, "--downloads-per-day"),
            "password_hash": None if password is None else _password_hash(name, password),
        }
        key = secrets.token_hex(16)
        with self.db.transaction() as tx:
            if tx.one("user_by_name", {"name": name}) is not None:
                raise UserError(f"user {name} exists already; pick another name")
            row = tx.one("user_insert", {**params, "api_key_hash": hash_key(key)})
            assert row is not None
            return int(row["id"]), key

    def new_key(self, name: str) -> str:
        """A new API key for an existing user (shown once); the old key stops working."""
        key = secrets.token_hex(16)
        with self.db.transaction() as tx:
            if tx.one("user_set_key", {"name": name, "api_key_hash": hash_key(key)}) is None:
                raise UserError(f"no user {name}")
        return key

    def set_password(self, name: str, password: str) -> None:
        """The user's web UI password (WeakPassword if too short); sessions the old one opened end."""
        stored = _password_hash(name, password)
        with self.db.transaction() as tx:
            row = tx.one("user_set_password", {"name": name, "password_hash": stored})
            if row is None:
                raise UserError(f"no user {name}")
            tx.execute("user_sessions_delete", {"user_id": row["id"]})

    def check_password(self, name: str, password: str) -> ApiUser | None:
        """The enabled user with this name and password, or None."""
        with self.db.transaction(write=False) as tx:
            row = tx.one("user_by_name", {"name": name}) if USER_NAME.match(name) else None
        stored = row["password_hash"] if row is not None else None
        # Hash even when there is nothing to compare with, so the time taken does not tell which
        # user names exist.
        if not verify_password(password, stored or _no_password()) or row is None or stored is None:
            return None
        if not row["enabled"]:
            return None
        return ApiUser(int(row["id"]), str(row["name"]), row["requests_per_day"], row["downloads_per_day"])

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self.db.transaction() as tx:
            if tx.one("user_set_enabled", {"name": name, "enabled": enabled}) is None:
                raise UserError(f"no user {name}")

    def set_limits(self, name: str, requests_per_day: int | None, downloads_per_day: int | None) -> None:
        params = {
            "name": name,
            "requests_per_day": _limit(requests_per_day, "requests per day"),
            "downloads_per_day": _limit(downloads_per_day, "downloads per day"),
        }
        with self.db.transaction() as tx:
            if tx.one("user_set_limits", params) is None:
                raise UserError(f"no user {name}")

    def all(self) -> list[UserInfo]:
        with self.db.transaction(write=False) as tx:
            rows = tx.run("users_all")
        return [
            UserInfo(
                id=int(r["id"]),
                name=r["name"],
                enabled=bool(r["enabled"]),
                requests_per_day=r["requests_per_day"],
                downloads_per_day=r["downloads_per_day"],
                requests_today=int(r["requests_today"]),
                downloads_today=int(r["downloads_today"]),
                created_at=float(r["created_at"]),
                last_seen_at=r["last_seen_at"],
                now=float(r["now"]),
            )
            for r in rows
        ]

    def authenticate(self, key: str | None) -> ApiUser:
        """The enabled user whose key this is; BadKey otherwise."""
        if not key or not API_KEY.match(key):
            raise BadKey("Incorrect user credentials")
        digest = hash_key(key)
        with self.db.transaction(write=False) as tx:
            row = tx.one("user_by_key", {"api_key_hash": digest})
        if row is None or not hmac.compare_digest(str(row["api_key_hash"]), digest):
            raise BadKey("Incorrect user credentials")
        if not row["enabled"]:
            raise BadKey("Account disabled")
        return ApiUser(int(row["id"]), str(row["name"]), row["requests_per_day"], row["downloads_per_day"])

    def count_request(self, user: ApiUser) -> Usage:
        """Count one API request, and the day's usage with it; LimitReached (newznab 500) past the
        day's limit."""
        with self.db.transaction() as tx:
            row = tx.one("usage_count_request", {"user_id": user.id})
            tx.execute("user_seen", {"user_id": user.id})
        assert row is not None
        if user.requests_per_day is not None and int(row["requests"]) > user.requests_per_day:
            raise LimitReached("request", user.requests_per_day)
        return Usage(
            int(row["requests"]), user.requests_per_day, int(row["downloads"]), user.downloads_per_day
        )

    def count_download(self, user: ApiUser, release_id: int) -> None:
        """Count one NZB download for the user and a grab for the release, in one transaction; past the
        day's limit LimitReached (newznab 501) and nothing is counted."""
        with self.db.transaction() as tx:
            row = tx.one("usage_count_download", {"user_id": user.id})
            assert row is not None
            if user.downloads_per_day is not None and int(row["downloads"]) > user.downloads_per_day:
                tx.execute("usage_uncount_download", {"user_id": user.id})
                over = True
            else:
                tx.execute("release_grab", {"id": release_id})
                over = False
        if over:
            assert user.downloads_per_day is not None
            raise LimitReached("download", user.downloads_per_day)
