"""Web UI sessions: the admin's, and users' (issue 18: the catalog is private unless ``public_catalog``).

A session is a random token in an HttpOnly, SameSite=Strict cookie, of which only a hash is stored
(``web_sessions``), with the CSRF token every form of the session carries. ``user_id`` NULL is the
admin's session; a user's ends when the user is disabled, removed, or given a new password.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from starlette.requests import Request

from usenet_indexer.coordinator.registries.users import ApiUser
from usenet_indexer.coordinator.wiring import Services
from usenet_indexer.passwords import verify_password

SESSION_COOKIE = "uix_session"
_CACHE_KEY = "uix_session"
_NONE = object()


@dataclass(frozen=True, slots=True)
class Session:
    csrf: str
    user: ApiUser | None  # None: the admin

    @property
    def admin(self) -> bool:
        return self.user is None


def token_hash(token: str) -> str:
    # Tokens are 256 random bits: a plain SHA-256 is enough (there is no dictionary to slow down).
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def current_session(services: Services, request: Request) -> Session | None:
    """The session the request's cookie names (looked up once per request), or None."""
    cached = request.scope.get(_CACHE_KEY, _NONE)
    if cached is not _NONE:
        return cached  # type: ignore[no-any-return]
    token = request.cookies.get(SESSION_COOKIE, "")
    session = None
    if token and len(token) < 200:
        with services.db.transaction(write=False) as tx:
            row = tx.one("session_get", {"token_hash": token_hash(token)})
        if row is not None and row["user_id"] is None:
            session = Session(str(row["csrf"]), None)
        elif row is not None and row["name"] is not None and row["enabled"]:
            user = ApiUser(
                int(row["user_id"]), str(row["name"]), row["requests_per_day"], row["downloads_per_day"]
            )
            session = Session(str(row["csrf"]), user)
    request.scope[_CACHE_KEY] = session
    return session


def admin_session(services: Services, request: Request) -> Session | None:
    session = current_session(services, request)
    return session if session is not None and session.admin else None


def admin_password_ok(services: Services, password: str) -> bool:
    stored = services.settings.admin_password_hash
    return bool(stored) and verify_password(password, stored)


def open_session(services: Services, user: ApiUser | None) -> str:
    """A new session for the user (None: the admin); its cookie's token."""
    token = secrets.token_urlsafe(32)
    params = {
        "token_hash": token_hash(token),
        "csrf": secrets.token_urlsafe(24),
        "user_id": None if user is None else user.id,
        "ttl": services.settings.web_session_hours * 3600,
    }
    with services.db.transaction() as tx:
        tx.execute("sessions_expire")
        tx.execute("session_insert", params)
    return token


def close_session(services: Services, request: Request) -> None:
    token = request.cookies.get(SESSION_COOKIE, "")
    if token and len(token) < 200:
        with services.db.transaction() as tx:
            tx.execute("session_delete", {"token_hash": token_hash(token)})
