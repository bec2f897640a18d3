"""moto's S3 server on loopback, for the object-storage tests: one process per test session, a fresh
bucket per test. Started on a free port as its own process (``python -m moto.server``), so that
coordinator processes reach it exactly as they would a real S3-compatible service."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from usenet_indexer.storage.s3 import S3BlobStore, S3Options, s3_blob_store

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client

# moto accepts any credentials; these only have to be given, so that no real ones are ever looked for.
ACCESS_KEY = "test-access-key"
SECRET_KEY = "test-secret-key-never-logged"
REGION = "us-east-1"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoServer:
    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = log
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.process.poll() is None, log.read_text()[-3000:]
            try:
                httpx.get(f"{self.endpoint}/moto-api/", timeout=1)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError(f"moto did not start:\n{log.read_text()[-3000:]}")

    def options(self, **overrides: Any) -> S3Options:
        values: dict[str, Any] = {
            "endpoint_url": self.endpoint,
            "region": REGION,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "addressing_style": "path",
        }
        values.update(overrides)
        return S3Options(**values)

    def client(self) -> S3Client:
        return s3_blob_store("s3://unused", self.options()).client

    def new_bucket(self) -> str:
        name = f"test-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def store(self, bucket: str, prefix: str = "", **overrides: Any) -> S3BlobStore:
        url = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        return s3_blob_store(url, self.options(**overrides))

    def settings(self, bucket: str, prefix: str = "indexer") -> dict[str, Any]:
        """Settings (names as in settings.py) for a coordinator storing in ``bucket``."""
        return {
            "storage_url": f"s3://{bucket}/{prefix}",
            "s3_endpoint_url": self.endpoint,
            "s3_region": REGION,
            "s3_access_key_id": ACCESS_KEY,
            "s3_secret_access_key": SECRET_KEY,
            "s3_addressing_style": "path",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


def uploads_in_progress(store: S3BlobStore) -> list[str]:
    reply = store.client.list_multipart_uploads(Bucket=store.location.bucket)
    return [upload["Key"] for upload in reply.get("Uploads", [])]
