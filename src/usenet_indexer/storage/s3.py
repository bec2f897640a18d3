"""S3-compatible object storage as a ``BlobStore``: ``storage_url = "s3://bucket/prefix"``.

For deployments with several coordinators (docs/DEPLOY.md): every coordinator must see the same spool,
corpus and snapshots, and a large indexer's corpus is terabytes. Any S3-compatible service works (AWS,
MinIO, Ceph RGW, Cloudflare R2, Backblaze B2, Wasabi…); the tests run against moto's server.

How the ``BlobStore`` promises are kept:

- **Atomic puts.** S3 shows an object whole or not at all. A blob up to ``part_bytes`` is one
  PutObject; a bigger one (a streamed snapshot) is a multipart upload whose parts are invisible until
  CompleteMultipartUpload, and which is aborted on any failure and past the writer's cap. An upload
  left behind by a coordinator that died mid-way is still invisible; ``sweep_temporary`` aborts it
  after an hour (the spool clean-up loop), and a bucket lifecycle rule can too (DEPLOY.md).
- **Reads** are one range-less GetObject streamed in pieces. ``open`` asks for the size (HeadObject)
  and reads only when iterated, with ``If-Match`` on the ETag it saw: a blob replaced or removed in
  between fails the read (``BlobError``) instead of mixing two versions under one Content-Length.
- **Listing** (and so ``delete_prefix`` and ``size``) pages through ListObjectsV2, 1,000 keys a page;
  deletes go 1,000 keys per DeleteObjects.
- **Errors**: a missing key is None/False, as locally; anything else the client raises (after its own
  retries) is a ``BlobError`` naming the operation and key, never the credentials.

Why boto3 and not a lighter client (a hand-signed SigV4 over httpx, or minio): it is the reference
implementation that every S3-compatible service tests against; it brings the whole credential chain
(environment, ``~/.aws``, instance and container roles, web identity) that a deployment expects,
retries with backoff, both addressing styles, and the multipart protocol; and moto, the test server,
is built on it. Its cost — ~0.3 s of import and ~80 MB installed — is paid only by a coordinator whose
``storage_url`` is ``s3://`` (this module is imported then, not before), and only by installs that ask
for it: boto3 is the ``s3`` extra (``pip install 'usenet-indexer[s3]'``, ``uv sync --extra s3``).
Settings import this module to check an ``s3://`` URL; without boto3 that import raises a
``MissingExtra`` naming the extra, which settings refuse as a setting, at startup. Clients are
thread-safe; one is shared by all the coordinator's threads, with a connection pool as big as its
storage threads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NoReturn
from urllib.parse import urlsplit

from usenet_indexer.extras import MissingExtra, missing_extra
from usenet_indexer.storage.blobs import BlobError, BlobStore, BlobTooLarge, check_key

if TYPE_CHECKING:
    from mypy_boto3_s3.client import S3Client
    from mypy_boto3_s3.type_defs import CompletedPartTypeDef


def _no_boto3() -> MissingExtra:
    return missing_extra("s3", "the s3:// store (storage_url)", "boto3")


# botocore's exceptions now (15 ms); boto3 itself when a client is made (0.25 s), but whether it is
# there now, so that settings naming an s3:// store are refused without it.
try:
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError as error:
    raise _no_boto3() from error
if importlib.util.find_spec("boto3") is None:
    raise _no_boto3()

MIN_PART_BYTES = 5 << 20  # S3's least size for every part but the last
DEFAULT_PART_BYTES = 8 << 20
DELETE_BATCH = 1000  # DeleteObjects takes at most this many keys
LIST_PAGE = 1000  # ListObjectsV2 and ListMultipartUploads give at most this many a page
NOT_FOUND = {"404", "NoSuchKey", "NotFound"}
CHANGED = {"412", "PreconditionFailed"}


class StorageUrlError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class S3Location:
    bucket: str
    prefix: str  # "" or a valid key: every blob's key is "<prefix>/<key>"

    @classmethod
    def parse(cls, url: str) -> S3Location:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc or parts.query or parts.fragment:
            raise StorageUrlError(
                f"not an S3 storage URL: {url!r} (expected s3://bucket or s3://bucket/prefix)"
            )
        prefix = parts.path.strip("/")
        if prefix:
            try:
                check_key(prefix)
            except BlobError:
                raise StorageUrlError(
                    f"storage URL {url!r}: the prefix may hold letters, digits and + _ . - between slashes"
                ) from None
        return cls(parts.netloc, prefix)

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}" if self.prefix else f"s3://{self.bucket}"


def _code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class S3Writer:
    """Pieces buffered up to ``part_bytes``; past that a multipart upload, part by part. Nothing is
    visible until ``commit``; any failure, and the cap, abort the upload."""

    def __init__(self, store: S3BlobStore, key: str, max_bytes: int) -> None:
        self.store, self.key, self.max_bytes = store, key, max_bytes
        self.name = store._name(key)
        self.buffer = bytearray()
        self.size = 0
        self.upload_id: str | None = None
        self.parts: list[CompletedPartTypeDef] = []
        self.closed = False

    def write(self, piece: bytes) -> None:
        if self.closed:
            raise BlobError(f"{self.key}: written after commit or abort")
        self.size += len(piece)
        if self.size > self.max_bytes:
            self.abort()
            raise BlobTooLarge(f"{self.key}: more than {self.max_bytes} bytes")
        self.buffer += piece
        part = self.store.part_bytes
        while len(self.buffer) >= part:
            self._upload_part(bytes(self.buffer[:part]))
            del self.buffer[:part]

    def _upload_part(self, data: bytes) -> None:
        client, bucket = self.store.client, self.store.location.bucket
        try:
            if self.upload_id is None:
                self.upload_id = client.create_multipart_upload(Bucket=bucket, Key=self.name)["UploadId"]
            number = len(self.parts) + 1
            etag = client.upload_part(
                Bucket=bucket, Key=self.name, UploadId=self.upload_id, PartNumber=number, Body=data
            )["ETag"]
        except (BotoCoreError, ClientError) as error:
            self.abort()
            self.store._fail("upload part of", self.key, error)
        self.parts.append({"ETag": etag, "PartNumber": number})

    def commit(self) -> int:
        if self.closed:
            raise BlobError(f"{self.key}: committed after commit or abort")
        client, bucket = self.store.client, self.store.location.bucket
        try:
            if self.upload_id is None:
                client.put_object(Bucket=bucket, Key=self.name, Body=bytes(self.buffer))
            else:
                if self.buffer or not self.parts:
                    self._upload_part(bytes(self.buffer))
                client.complete_multipart_upload(
                    Bucket=bucket,
                    Key=self.name,
                    UploadId=self.upload_id,
                    MultipartUpload={"Parts": self.parts},
                )
        except (BotoCoreError, ClientError) as error:
            self.abort()
            self.store._fail("put", self.key, error)
        except BaseException:
            self.abort()
            raise
        self.closed = True
        self.buffer = bytearray()
        return self.size

    def abort(self) -> None:
        self.closed = True
        self.buffer = bytearray()
        upload_id, self.upload_id = self.upload_id, None
        if upload_id is None:
            return
        # Should the abort fail, the upload is still invisible; sweep_temporary (or the bucket's
        # lifecycle rule) aborts it later.
        with contextlib.suppress(BotoCoreError, ClientError):
            self.store.client.abort_multipart_upload(
                Bucket=self.store.location.bucket, Key=self.name, UploadId=upload_id
            )


class S3BlobStore(BlobStore):
    """Blobs as objects under ``location``; see the module's notes."""

    def __init__(
        self, client: S3Client, location: S3Location, *, part_bytes: int = DEFAULT_PART_BYTES
    ) -> None:
        if part_bytes < MIN_PART_BYTES:
            raise ValueError(f"S3 parts must be at least {MIN_PART_BYTES} bytes, not {part_bytes}")
        self.client = client
        self.location = location
        self.part_bytes = part_bytes
        self.page_size = LIST_PAGE  # smaller in tests, to cross page boundaries with a few keys
        self.delete_batch = DELETE_BATCH

    def __repr__(self) -> str:
        return f"S3BlobStore({str(self.location)!r})"

    # -- names ---------------------------------------------------------------------------------------

    def _name(self, key: str) -> str:
        check_key(key)
        return f"{self.location.prefix}/{key}" if self.location.prefix else key

    def _key(self, name: str) -> str | None:
        """The blob key of an object name under the store's prefix (None: not one of ours)."""
        prefix = self.location.prefix
        if prefix:
            if not name.startswith(prefix + "/"):
                return None
            name = name[len(prefix) + 1 :]
        try:
            return check_key(name)
        except BlobError:
            return None  # an object put there by someone else, under a name we would never make

    def _fail(self, what: str, key: str, error: Exception) -> NoReturn:
        raise BlobError(f"{self.location}: {what} {key} failed: {error}") from error

    # -- the protocol --------------------------------------------------------------------------------

    def check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.location.bucket)
        except ClientError as error:
            raise BlobError(
                f"{self.location}: the bucket answered {_code(error) or error}: create the bucket, or check "
                "storage_url, s3_endpoint_url, s3_region and the credentials (s3_access_key_id and "
                "s3_secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            ) from error
        except BotoCoreError as error:
            raise BlobError(
                f"{self.location}: object storage not reachable ({error}): check s3_endpoint_url"
            ) from error

    def writer(self, key: str, *, max_bytes: int) -> S3Writer:
        return S3Writer(self, key, max_bytes)

    def get(self, key: str) -> bytes | None:
        name = self._name(key)
        try:
            body = self.client.get_object(Bucket=self.location.bucket, Key=name)["Body"]
            try:
                return body.read()
            finally:
                body.close()
        except ClientError as error:
            if _code(error) in NOT_FOUND:
                return None
            self._fail("get", key, error)
        except BotoCoreError as error:
            self._fail("get", key, error)

    def _head(self, key: str) -> dict[str, Any] | None:
        try:
            head = self.client.head_object(Bucket=self.location.bucket, Key=self._name(key))
        except ClientError as error:
            if _code(error) in NOT_FOUND:
                return None
            self._fail("head", key, error)
        except BotoCoreError as error:
            self._fail("head", key, error)
        return dict(head)

    def open(self, key: str, piece_size: int = 1 << 20) -> tuple[int, Iterator[bytes]] | None:
        head = self._head(key)
        if head is None:
            return None
        size, etag = int(head["ContentLength"]), str(head["ETag"])
        name, bucket = self._name(key), self.location.bucket

        def pieces() -> Iterator[bytes]:
            # Read when iterated, not when asked for: a caller that only wanted the size holds no
            # connection. If-Match: the same object the size came from, or a readable failure.
            try:
                body = self.client.get_object(Bucket=bucket, Key=name, IfMatch=etag)["Body"]
            except ClientError as error:
                if _code(error) in NOT_FOUND:
                    raise BlobError(f"{key} was removed while being read") from None
                if _code(error) in CHANGED:
                    raise BlobError(f"{key} was replaced while being read") from None
                self._fail("get", key, error)
            except BotoCoreError as error:
                self._fail("get", key, error)
            try:
                yield from body.iter_chunks(piece_size)
            except BotoCoreError as error:
                self._fail("read", key, error)
            finally:
                body.close()

        return size, pieces()

    def exists(self, key: str) -> bool:
        return self._head(key) is not None

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.location.bucket, Key=self._name(key))
        except (BotoCoreError, ClientError) as error:
            self._fail("delete", key, error)

    def _objects(self, prefix: str) -> Iterator[tuple[str, str, int]]:
        """(object name, key, size) of every blob under ``prefix/``, page by page."""
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            pages = paginator.paginate(
                Bucket=self.location.bucket,
                Prefix=self._name(prefix) + "/",
                PaginationConfig={"PageSize": self.page_size},
            )
            for page in pages:
                for item in page.get("Contents", []):
                    name = item["Key"]
                    key = self._key(name)
                    if key is not None:
                        yield name, key, int(item["Size"])
        except (BotoCoreError, ClientError) as error:
            self._fail("list", prefix, error)

    def delete_prefix(self, prefix: str) -> None:
        names = [name for name, _, _ in self._objects(prefix)]
        for start in range(0, len(names), self.delete_batch):
            batch = names[start : start + self.delete_batch]
            try:
                reply = self.client.delete_objects(
                    Bucket=self.location.bucket,
                    Delete={"Objects": [{"Key": name} for name in batch], "Quiet": True},
                )
            except (BotoCoreError, ClientError) as error:
                self._fail("delete under", prefix, error)
            errors = reply.get("Errors", [])
            if errors:
                first = errors[0]
                raise BlobError(
                    f"{self.location}: delete under {prefix}: {len(errors)} objects not deleted, "
                    f"e.g. {first.get('Key')}: {first.get('Code')} {first.get('Message')}"
                )

    def list(self, prefix: str) -> list[str]:
        return sorted(key for _, key, _ in self._objects(prefix))

    def size(self, prefix: str) -> int:
        return sum(size for _, _, size in self._objects(prefix))

    def sweep_temporary(self, prefix: str, older_than_seconds: float) -> int:
        """Abort multipart uploads under ``prefix/`` begun longer ago than that (a writer that died)."""
        cutoff = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=older_than_seconds)
        bucket = self.location.bucket
        stale: list[tuple[str, str]] = []
        paginator = self.client.get_paginator("list_multipart_uploads")
        try:
            pages = paginator.paginate(
                Bucket=bucket, Prefix=self._name(prefix) + "/", PaginationConfig={"PageSize": self.page_size}
            )
            for page in pages:
                for upload in page.get("Uploads", []):
                    if upload["Initiated"] < cutoff:
                        stale.append((upload["Key"], upload["UploadId"]))
            for name, upload_id in stale:
                self.client.abort_multipart_upload(Bucket=bucket, Key=name, UploadId=upload_id)
        except ClientError as error:
            if _code(error) == "NoSuchUpload":
                return len(stale)  # aborted meanwhile (another coordinator's sweep): gone all the same
            self._fail("sweep under", prefix, error)
        except BotoCoreError as error:
            self._fail("sweep under", prefix, error)
        return len(stale)


@dataclass(frozen=True, slots=True)
class S3Options:
    """How to reach the store; credentials None: boto3's own chain (environment, ~/.aws, roles)."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    addressing_style: Literal["auto", "path", "virtual"] = "auto"
    connections: int = 32
    part_bytes: int = DEFAULT_PART_BYTES


def s3_blob_store(url: str, options: S3Options) -> S3BlobStore:
    try:
        import boto3
        from botocore.config import Config
    except ImportError as error:  # removed since this module was imported
        raise _no_boto3() from error

    location = S3Location.parse(url)
    config = Config(
        max_pool_connections=options.connections,
        retries={"mode": "standard", "max_attempts": 5},
        connect_timeout=10,
        read_timeout=60,
        s3={"addressing_style": options.addressing_style},
    )
    # A session of its own: boto3's default session is module-global and not thread-safe to create.
    session = boto3.session.Session()
    client = session.client(
        "s3",
        endpoint_url=options.endpoint_url or None,
        region_name=options.region or None,
        aws_access_key_id=options.access_key_id or None,
        aws_secret_access_key=options.secret_access_key or None,
        config=config,
    )
    return S3BlobStore(client, location, part_bytes=options.part_bytes)
