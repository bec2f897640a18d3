"""boto3 is the ``s3`` extra: without it, settings naming an ``s3://`` store are refused at startup with a
message naming the extra, and everything else works. Here boto3 is made unimportable in this process
(``sys.modules[name] = None``); tests/e2e/test_install.py checks the same in a real install without it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import ValidationError

from usenet_indexer.coordinator.wiring import open_blob_store
from usenet_indexer.extras import MissingExtra
from usenet_indexer.settings import Settings
from usenet_indexer.storage.blobs import LocalBlobStore

S3_MODULE = "usenet_indexer.storage.s3"
# What the message must tell: what needs boto3, and how to install the extra.
NAMES_THE_EXTRA = [
    "the s3:// store (storage_url) needs boto3",
    "usenet-indexer[s3]",
    "uv sync --extra s3",
    "pipx install 'usenet-indexer[s3]'",
]


@pytest.fixture
def uninstall(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Make packages unimportable here until the test ends, as if not installed; storage/s3.py is then
    imported afresh (monkeypatch puts every module back afterwards)."""

    def hide(*packages: str) -> None:
        monkeypatch.delitem(sys.modules, S3_MODULE, raising=False)
        for package in packages:
            for name in [n for n in sys.modules if n == package or n.startswith(package + ".")]:
                monkeypatch.setitem(sys.modules, name, None)
            monkeypatch.setitem(sys.modules, package, None)

    return hide


def assert_names_the_extra(message: str) -> None:
    for words in NAMES_THE_EXTRA:
        assert words in message, message


@pytest.mark.parametrize(
    "missing",
    [
        pytest.param(("boto3", "botocore", "s3transfer"), id="no-boto3-no-botocore"),
        pytest.param(("boto3",), id="botocore-without-boto3"),
    ],
)
def test_an_s3_store_without_boto3_is_a_settings_error_naming_the_extra(
    uninstall: Callable[..., None], tmp_path: Path, missing: tuple[str, ...]
) -> None:
    uninstall(*missing)
    with pytest.raises(ValidationError) as refused:
        Settings(data_dir=tmp_path, storage_url="s3://indexer-blobs/prod")
    assert_names_the_extra(str(refused.value))
    # One error, about the setting, not an import failing somewhere inside.
    (error,) = refused.value.errors()
    assert error["type"] == "value_error"
    assert "ModuleNotFoundError" not in str(refused.value)


def test_the_store_itself_names_the_extra_too(uninstall: Callable[..., None], tmp_path: Path) -> None:
    # Settings that skipped their checks (model_construct): opening the store still says what to do.
    settings = Settings.model_construct(data_dir=tmp_path, storage_url="s3://indexer-blobs/prod")
    uninstall("boto3", "botocore", "s3transfer")
    with pytest.raises(MissingExtra) as refused:
        open_blob_store(settings)
    assert_names_the_extra(str(refused.value))
    assert isinstance(refused.value, ImportError) and refused.value.name == "boto3"


def test_without_boto3_the_local_store_works(uninstall: Callable[..., None], tmp_path: Path) -> None:
    uninstall("boto3", "botocore", "s3transfer")
    for url in ("", str(tmp_path / "blobs"), f"file://{tmp_path / 'blobs'}"):
        store = open_blob_store(Settings(data_dir=tmp_path, storage_url=url))
        assert isinstance(store, LocalBlobStore)
        store.put("spool/a", b"x")
        assert store.get("spool/a") == b"x"
    assert sys.modules.get("boto3") is None  # nothing got past the block


def test_with_boto3_the_same_settings_are_accepted(tmp_path: Path) -> None:
    # The check above refuses only when boto3 is missing (the suite runs with the s3 extra).
    settings = Settings(data_dir=tmp_path, storage_url="s3://indexer-blobs/prod")
    assert settings.blobs_directory() is None
