"""Edge nodes: named, each with a bearer token of which only a hash is kept."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from usenet_indexer.db import Database

TOKEN_PREFIX = "uin_"


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,63}$")


class NodeError(ValueError):
    pass


class Unauthorized(Exception):
    """No token, or one that names no node (HTTP 401)."""


class NodeDisabled(Exception):
    """The token's node is disabled (HTTP 403)."""


@dataclass(frozen=True, slots=True)
class NodeInfo:
    id: int
    name: str
    enabled: bool
    last_seen_at: float | None
    leased: int
    now: float


def hash_token(token: str) -> str:
    # Tokens are 256 random bits: a plain SHA-256 is enough (no dictionary to slow down).
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Nodes:
    def __init__(self, db: Database) -> None:
        self.db = db

    def add(self, name: str) -> tuple[int, str]:
        """A new node and its token; the token is shown once and never stored."""
        if not NODE_NAME.match(name):
            raise NodeError(f"not a node name: {name!r} (up to 64 letters, digits, . _ -)")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        with self.db.transaction() as tx:
            if tx.one("node_by_name", {"name": name}) is not None:
                raise NodeError(f"node {name} exists already; pick another name")
            row = tx.one("node_insert", {"name": name, "token_hash": hash_token(token)})
            assert row is not None
            return int(row["id"]), token

    def issue(self, name: str, token: str | None = None) -> tuple[int, str]:
        """The node's id and a new token (``token``, made by ``new_token`` before the store was open,
        or one made now), adding the node when it is missing; an existing node's old token stops
        working and the node is enabled (``run`` does this for its workers at every start)."""
        if not NODE_NAME.match(name):
            raise NodeError(f"not a node name: {name!r} (up to 64 letters, digits, . _ -)")
        if token is None:
            token = new_token()
        elif not token.startswith(TOKEN_PREFIX) or len(token) < len(TOKEN_PREFIX) + 32:
            raise NodeError("a node token is made by new_token()")
        with self.db.transaction() as tx:
            row = tx.one("node_set_token", {"name": name, "token_hash": hash_token(token)})
            if row is None:
                row = tx.one("node_insert", {"name": name, "token_hash": hash_token(token)})
            assert row is not None
            return int(row["id"]), token

    def authenticate(self, token: str | None) -> int:
        """The node id for a bearer token; Unauthorized or NodeDisabled otherwise."""
        if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
            raise Unauthorized("a node token is needed: `Authorization: Bearer uin_…`")
        digest = hash_token(token)
        with self.db.transaction(write=False) as tx:
            row = tx.one("node_by_token", {"token_hash": digest})
        if row is None or not hmac.compare_digest(str(row["token_hash"]), digest):
            raise Unauthorized("unknown node token")
        if not row["enabled"]:
            raise NodeDisabled(f"node {row['name']} is disabled")
        return int(row["id"])

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self.db.transaction() as tx:
            if tx.one("node_set_enabled", {"name": name, "enabled": enabled}) is None:
                raise NodeError(f"no node {name}")

    def all(self) -> list[NodeInfo]:
        with self.db.transaction(write=False) as tx:
            rows = tx.run("nodes_all")
        return [
            NodeInfo(
                int(r["id"]),
                r["name"],
                bool(r["enabled"]),
                r["last_seen_at"],
                int(r["leased"]),
                float(r["now"]),
            )
            for r in rows
        ]
