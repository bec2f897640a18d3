"""What one connection can hold of the coordinator, over a real socket to a real uvicorn (issue 15.5,
15.6): bodies cut at their cap as they are read, chunked or not; headers and bodies that do not come
in time; the connection cap; TLS; and plain HTTP beyond loopback refused unless asked for."""

from __future__ import annotations

import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.support.live import live_coordinator
from tests.support.store import services_for
from tests.support.store import test_settings as settings_for
from usenet_indexer.coordinator.http.exposure import ServeError, check_exposure
from usenet_indexer.coordinator.wiring import Services


@pytest.fixture
def limited(database_url: str, tmp_path: Path) -> Iterator[tuple[Services, str]]:
    services = services_for(
        database_url,
        tmp_path,
        request_max_bytes=64 * 1024,
        request_header_seconds=1.0,
        request_body_idle_seconds=1.0,
        http_max_connections=24,
    )
    try:
        with live_coordinator(services) as url:
            yield services, url
    finally:
        services.close()


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    return socket.create_connection((parts.hostname, parts.port), timeout=10)


def read_all(sock: socket.socket, seconds: float = 10.0) -> bytes:
    sock.settimeout(seconds)
    out = b""
    try:
        while piece := sock.recv(65536):
            out += piece
    except (TimeoutError, ConnectionResetError):
        pass
    return out


def test_a_chunked_body_is_cut_at_the_cap_as_it_is_read(limited: tuple[Services, str]) -> None:
    """A chunked POST /admin/login of 90 MB was read whole before its 400 (the cap looked at
    Content-Length only)."""
    _, url = limited
    sock = connect(url)
    sock.sendall(
        b"POST /admin/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n\r\n"
    )
    piece = b"a" * 16384
    sent = 0
    try:
        for _ in range(90 * 64):  # 90 MB, if the server lets it in
            sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
    except (BrokenPipeError, ConnectionResetError):
        pass
    reply = read_all(sock, 5.0)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert sent < 8 << 20, f"{sent:,} bytes went in before the refusal"


def test_headers_that_trickle_in_are_cut_off(limited: tuple[Services, str]) -> None:
    _, url = limited
    sock = connect(url)
    began = time.monotonic()
    try:
        for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100:
            sock.sendall(bytes([byte]))
            time.sleep(0.1)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert read_all(sock, 3.0) == b""  # closed, nothing answered
    assert time.monotonic() - began < 4.0
    sock.close()


def test_a_body_that_stops_coming_is_a_408(limited: tuple[Services, str]) -> None:
    _, url = limited
    sock = connect(url)
    sock.sendall(
        b"POST /admin/login HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n\r\npassword=abc"
    )
    began = time.monotonic()
    reply = read_all(sock, 5.0)
    sock.close()
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert time.monotonic() - began < 3.0


def test_connections_past_the_cap_are_refused(limited: tuple[Services, str]) -> None:
    _, url = limited
    held = [connect(url) for _ in range(24)]  # each one idle, holding its place
    try:
        reply = httpx.get(f"{url}/healthz", timeout=5.0)
        assert reply.status_code == 503
    finally:
        for sock in held:
            sock.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the server sees them go
        if httpx.get(f"{url}/healthz", timeout=5.0).status_code == 200:
            return
        time.sleep(0.1)
    pytest.fail("the server still refused after the held connections closed")


def test_plain_http_beyond_loopback_needs_to_be_asked_for(tmp_path: Path) -> None:
    settings = settings_for("sqlite:///x.db", tmp_path, host="0.0.0.0")
    with pytest.raises(ServeError, match="--insecure-http"):
        check_exposure(settings)
    check_exposure(settings_for("sqlite:///x.db", tmp_path, host="0.0.0.0", insecure_http=True))
    check_exposure(settings_for("sqlite:///x.db", tmp_path, host="::1"))
    with pytest.raises(ServeError, match="both"):
        check_exposure(settings_for("sqlite:///x.db", tmp_path, tls_certfile=tmp_path / "cert.pem"))


def test_https_with_the_certificate_given(database_url: str, tmp_path: Path) -> None:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    services = services_for(database_url, tmp_path, tls_certfile=cert, tls_keyfile=key, host="0.0.0.0")
    try:
        with live_coordinator(services) as url:
            assert url.startswith("https://")
            trusted = ssl.create_default_context(cafile=str(cert))
            assert httpx.get(f"{url}/healthz", verify=trusted).json() == {"status": "ok"}
            with pytest.raises(httpx.ConnectError):
                httpx.get(f"{url}/healthz")  # not signed by a CA this client knows
            plain = url.replace("https://", "http://")
            with pytest.raises(httpx.HTTPError):
                httpx.get(f"{plain}/healthz", timeout=5.0)
    finally:
        services.close()
