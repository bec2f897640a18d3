"""`serve` checks its storage before it starts: a missing bucket is one message with what to do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.processes import settings_env
from tests.support.s3 import MotoServer


@pytest.mark.slow  # a process that imports boto3 and asks moto
def test_serve_refuses_to_start_without_its_bucket(tmp_path: Path, moto_server: MotoServer) -> None:
    storage = moto_server.settings("no-such-bucket-for-serve")
    env = settings_env(f"sqlite:///{tmp_path / 'db.sqlite'}", tmp_path / "data", **storage)
    result = subprocess.run(
        [sys.executable, "-m", "usenet_indexer", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "storage: s3://no-such-bucket-for-serve/indexer: the bucket answered" in result.stderr
    assert "create the bucket" in result.stderr
    assert str(storage["s3_secret_access_key"]) not in result.stdout + result.stderr
