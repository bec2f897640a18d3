"""Which store the settings choose, and what they refuse (no server: building a client sends nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from usenet_indexer.coordinator.wiring import open_blob_store
from usenet_indexer.settings import Settings
from usenet_indexer.storage.blobs import LocalBlobStore
from usenet_indexer.storage.s3 import S3BlobStore, S3Location, StorageUrlError

SECRET = "s3cr3t-value-that-must-not-show"


@pytest.mark.parametrize(
    ("url", "bucket", "prefix"),
    [("s3://bucket", "bucket", ""), ("s3://bucket/", "bucket", ""), ("s3://b/a/b.c-d", "b", "a/b.c-d")],
)
def test_s3_urls(url: str, bucket: str, prefix: str) -> None:
    assert S3Location.parse(url) == S3Location(bucket, prefix)


@pytest.mark.parametrize(
    "url", ["s3://", "s3:///x", "http://bucket/x", "s3://b/../x", "s3://b/a b", "s3://b/x?y"]
)
def test_bad_s3_urls(url: str) -> None:
    with pytest.raises(StorageUrlError):
        S3Location.parse(url)


def test_the_local_directory_by_default_or_where_the_url_says(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).blobs_directory() == tmp_path / "blobs"
    in_srv = Settings(data_dir=tmp_path, storage_url="file:///srv/blobs")
    assert in_srv.blobs_directory() == Path("/srv/blobs")
    assert Settings(data_dir=tmp_path, storage_url=str(tmp_path / "b")).blobs_directory() == tmp_path / "b"
    store = open_blob_store(Settings(data_dir=tmp_path))
    assert isinstance(store, LocalBlobStore) and store.root == tmp_path / "blobs"


def test_object_storage_when_the_url_is_s3(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        storage_url="s3://indexer-blobs/prod",
        s3_endpoint_url="http://127.0.0.1:9",
        s3_region="eu-west-1",
        s3_access_key_id="AKIAEXAMPLE",
        s3_secret_access_key=SECRET,  # type: ignore[arg-type]
    )
    assert settings.blobs_directory() is None
    store = open_blob_store(settings)
    assert isinstance(store, S3BlobStore)
    assert store.location == S3Location("indexer-blobs", "prod")
    assert store.client.meta.endpoint_url == "http://127.0.0.1:9"
    assert store.client.meta.region_name == "eu-west-1"
    # The secret shows nowhere a log line or a traceback could take it from.
    for text in (repr(settings), str(settings), settings.model_dump_json(), repr(store)):
        assert SECRET not in text


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"storage_url": "ftp://host/x"}, "storage_url"),
        ({"storage_url": "s3://b/a b"}, "prefix"),
        ({"storage_url": "s3://b", "s3_access_key_id": "x"}, "both s3_access_key_id"),
        ({"ownership_ttl_seconds": 20, "ownership_renew_seconds": 10}, "at least 3"),
        ({"s3_part_bytes": 1 << 20}, "s3_part_bytes"),
    ],
)
def test_settings_that_are_refused(tmp_path: Path, values: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(data_dir=tmp_path, **values)  # type: ignore[arg-type]
