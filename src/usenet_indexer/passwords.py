"""Web UI passwords (the admin's, users'): scrypt (the standard library's), stored as
``scrypt$n$r$p$salt$hash``. Pure (the standard library only), so that settings, which check and hash the
admin's, and the coordinator's users and sessions import it from below both."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

# 2^14 x 8 x 1: ~16 MB and ~50 ms on the development machine; enough for one admin login.
N, R, P = 1 << 14, 8, 1


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


MIN_LENGTH = 12  # a password shorter than this is refused where one is set


MAX_LENGTH = 1024  # verify_password refuses longer ones (scrypt's work grows with the input)


class WeakPassword(ValueError):
    pass


def check_strength(password: str, whose: str = "the admin password") -> str:
    """``password``, or WeakPassword saying why it cannot be one."""
    if len(password) < MIN_LENGTH:
        raise WeakPassword(
            f"{whose} must be at least {MIN_LENGTH} characters (a few words will do), not {len(password)}"
        )
    if len(password) > MAX_LENGTH:
        raise WeakPassword(f"{whose} must be at most {MAX_LENGTH} characters, not {len(password)}")
    return password


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=N, r=R, p=P, dklen=32)
    return f"scrypt${N}${R}${P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from; False for any malformed ``stored``."""
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt" or len(password) > MAX_LENGTH:
            return False
        expected = base64.b64decode(digest, validate=True)
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt, validate=True),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
            maxmem=256 << 20,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)
