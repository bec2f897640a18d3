"""Whether the coordinator may listen where it is told: checked by `serve` and `run` before they import
the web stack (network.py imports uvicorn and FastAPI, 0.25-0.5 s of a core that `run` now spends
while its loops already read the news server)."""

from __future__ import annotations

import ipaddress

from usenet_indexer.settings import Settings


class ServeError(ValueError):
    """A server configuration that must not start (said why, and what to do)."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(settings: Settings) -> None:
    """ServeError when the server would listen beyond loopback in plain HTTP, unless told so."""
    tls = settings.tls_certfile is not None
    if (settings.tls_certfile is None) != (settings.tls_keyfile is None):
        raise ServeError("give both tls_certfile and tls_keyfile (--tls-cert and --tls-key), or neither")
    if not is_loopback(settings.host) and not tls and not settings.insecure_http:
        raise ServeError(
            f"refusing to listen on {settings.host} in plain HTTP: node tokens, API keys and the admin "
            "password would cross the network in clear. Give a certificate (--tls-cert, --tls-key), or, "
            "behind a proxy that terminates TLS, say so with --insecure-http (docs/DEPLOY.md)"
        )
