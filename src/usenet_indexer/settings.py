"""Settings from flags, environment variables (``USENET_INDEXER_*``) and an optional TOML file.

Precedence, highest first: command-line flags, environment, the TOML file (``--config`` or
``USENET_INDEXER_CONFIG``, else ``./usenet-indexer.toml`` when it exists), the defaults here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

if TYPE_CHECKING:
    from usenet_indexer.nntp.pool import ServerSettings

DEFAULT_CONFIG_FILE = Path("usenet-indexer.toml")


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="USENET_INDEXER_", extra="forbid")

    data_dir: Path = Field(default=Path("data"), description="Where the SQLite file, spool and corpus live")
    database_url: str = Field(
        default="",
        description="postgresql://user@host/db or sqlite:///path (default: a SQLite file in data_dir)",
    )
    log_format: Literal["auto", "console", "json"] = "auto"
    log_level: str = "INFO"

    # Leases. The TTL is how long a worker may stay silent before its range is taken over; workers
    # heartbeat after every chunk, so it only has to outlast the slowest chunk plus a retried post.
    lease_ttl_seconds: float = Field(default=120.0, gt=0)
    max_leases_per_group: int = Field(default=2, ge=1)
    catalog_cap_bytes: int | None = Field(
        default=None, ge=0, description="At this size only priority<0 leases"
    )

    # Planning.
    range_articles: int = Field(default=1_000_000, ge=1)
    chunk_articles: int = Field(default=20_000, ge=1)
    era_articles: int = Field(default=10_000_000, ge=1)
    tail_min_articles: int = Field(default=10_000, ge=1)
    # A stretch planned at once (a new group's history, a tail that grew) is cut into at least this
    # many ranges where range_articles would make fewer, so that every worker gets one and the last
    # range does not run alone (leases/planning.py `cut`). `run` knows its workers and raises it
    # to 4 per worker; `serve` does not, so give it about 4 x the workers you run, if you like.
    range_spread: int = Field(default=1, ge=1, le=1000)

    # The chunk stream and what workers send.
    stream_chunk_wait_seconds: float = Field(
        default=3600.0, gt=0, description="Give up on a chunk after this"
    )
    stream_keepalive_seconds: float = Field(default=20.0, gt=0)
    # Streams one node may hold open at once (a worker streams one range at a time; `edge --processes
    # N` under one token streams N): past it, 429. Waiting streams hold no thread (node_api.py).
    stream_max_per_node: int = Field(default=64, ge=1, le=100_000)
    batch_max_bytes: int = Field(default=64 << 20, ge=1024, description="Cap on a posted batch, compressed")
    batch_max_inflated_bytes: int = Field(default=768 << 20, ge=1024, description="… and inflated")
    snapshot_max_bytes: int = Field(default=1 << 30, ge=1024)

    # -- Storage: the spool, the corpus and window snapshots (storage/) -----------------------------
    # A directory on this machine by default; object storage (s3://bucket/prefix) when several
    # coordinators must share them (docs/DEPLOY.md). Credentials: s3_access_key_id and
    # s3_secret_access_key here (the secret best in the environment or the TOML file), or left unset for
    # boto3's own chain (AWS_ACCESS_KEY_ID…, ~/.aws, an instance or container role). Never logged.
    storage_url: str = Field(
        default="",
        description="s3://bucket/prefix, or a directory (file:///path or a plain path); "
        "default: <data_dir>/blobs",
    )
    s3_endpoint_url: str | None = Field(
        default=None, description="An S3-compatible service's URL (none: AWS, by s3_region)"
    )
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_addressing_style: Literal["auto", "path", "virtual"] = "auto"
    s3_connections: int = Field(default=32, ge=1, le=1000, description="HTTP connections to the store")
    s3_part_bytes: int = Field(default=8 << 20, ge=5 << 20, le=5 << 30, description="Multipart part size")

    # Ownership leases of the background loops (seed 004): another coordinator takes a loop over after
    # the TTL of silence from its holder; the TTL must be at least 3 × the renew interval (checked).
    # Renewals run beside the works; a loop that cannot renew within the TTL stops writing (its fence).
    ownership_ttl_seconds: float = Field(default=30.0, gt=0)
    ownership_renew_seconds: float = Field(default=10.0, gt=0)

    # The coordinator's HTTP server.
    host: str = "127.0.0.1"
    port: int = Field(default=8710, ge=0, le=65535)
    # Facing the network (coordinator/http/network.py): HTTPS with a certificate and its key; plain HTTP
    # beyond loopback only when a proxy in front terminates TLS (insecure_http). Limits every request is held
    # to, whatever it claims: its body (counted as read), the time for its headers and between body
    # bytes, and the connections open at once.
    tls_certfile: Path | None = None
    tls_keyfile: Path | None = None
    insecure_http: bool = False
    # Proxies whose X-Forwarded-For/-Proto are believed (the client's address for the login lockout and
    # the operator pages; https for the session cookie's Secure flag): comma-separated addresses.
    trusted_proxies: str = "127.0.0.1,::1"
    request_max_bytes: int = Field(default=1 << 20, ge=1024, description="Any body but batches and snapshots")
    request_header_seconds: float = Field(default=10.0, gt=0)
    request_body_idle_seconds: float = Field(default=30.0, gt=0)
    http_max_connections: int = Field(default=2048, ge=16)
    public_url: str = Field(
        default="",
        description="The coordinator's address as clients reach it (links in API results); "
        "default: the address each request came to",
    )

    # The web UI's admin login. Give the hash (``usenet-indexer admin hash-password``); a plain
    # ``admin_password`` (e.g. from USENET_INDEXER_ADMIN_PASSWORD) is hashed when settings load and
    # not kept. Neither: the admin pages say how to set one and refuse every login.
    admin_password_hash: str = ""
    admin_password: str = Field(default="", repr=False)
    web_session_hours: float = Field(default=12.0, gt=0)
    # The web UI's catalog (dashboard, releases, their NZBs) takes a signed-in user (a password set
    # with `users add --password` / `users passwd`) or the admin. True opens it to anyone who can
    # reach the coordinator (issue 18: it was open, so an indexer served beyond loopback handed NZBs
    # to anyone). The newznab API takes API keys either way.
    public_catalog: bool = False

    # -- News servers and the loops that read them (issue 5) ---------------------------------------
    # The primary server: `serve` runs the planner, prefetcher and corpus fill when nntp_host is set.
    # Fill servers (asked for article bodies the primary lacks) only in TOML, as [[nntp_fill_servers]]
    # tables with the keys of nntp.pool.ServerSettings (host, port, ssl, user, password, connections…).
    nntp_host: str | None = Field(default=None, description="The news server (none: no news loops)")
    nntp_port: int = Field(default=0, ge=0, le=65535, description="0: 563 with nntp_ssl, else 119")
    nntp_ssl: bool = Field(default=False, description="NNTPS (implicit TLS), certificates verified")
    nntp_starttls: bool = False
    nntp_user: str | None = None
    nntp_password: SecretStr | None = None
    nntp_connections: int = Field(default=8, ge=1, le=500, description="The account's connection limit")
    nntp_ca_file: str | None = Field(default=None, description="CA file for a private TLS certificate")
    nntp_timeout: float = Field(default=30.0, gt=0)
    nntp_compression: Literal["auto", "deflate", "gzip", "gzip-terminator", "xzver", "none"] = Field(
        default="auto",
        description="auto: plain or compressed overview, whichever this server delivers faster, measured "
        "(and logged as nntp.compression_chosen); any other value is used as set",
    )
    nntp_fill_servers: list[dict[str, Any]] = Field(default_factory=list)

    # Planner: GROUP every so often; a date backfill target is found by binary search over dates.
    planner_period_seconds: float = Field(default=60.0, gt=0)
    # Prefetcher: the spool's cap (back-pressure past it), how hard plain replies are deflated here
    # (1-3: ISA-L, ~1.3 GB/s; 4-9: libdeflate, ~280 MB/s at 6 for a result 6% smaller; 0: kept plain
    # with a CRC, 8 times the bytes: wire/chunks.py; the spool is transient), how long a round runs
    # before it plans again from the leases.
    spool_cap_bytes: int = Field(default=20 << 30, ge=0)
    spool_deflate_level: int = Field(default=1, ge=0, le=9)
    prefetch_round_seconds: float = Field(default=5.0, gt=0)
    prefetch_idle_seconds: float = Field(default=1.0, gt=0, description="Between rounds with nothing to do")
    corpus_fill_period_seconds: float = Field(default=30.0, gt=0)
    probe_period_seconds: float = Field(default=30.0, gt=0, description="Obfuscated releases' PAR2 probes")
    # Off: no body is fetched, obfuscated releases keep the names their subjects give (a news account
    # whose bandwidth is counted; bench/obfuscation.py --probe-compare measures what probing costs).
    probe_bodies: bool = Field(default=True, description="Name obfuscated releases from their bodies")
    grouping_period_seconds: float = Field(
        default=10.0, gt=0, description="Loose files (per-file random names) joined into releases"
    )
    cleanup_period_seconds: float = Field(default=60.0, gt=0)

    @model_validator(mode="after")
    def _default_database(self) -> Settings:
        if not self.database_url:
            self.database_url = f"sqlite:///{(self.data_dir / 'usenet-indexer.db').as_posix()}"
        if self.admin_password:
            from usenet_indexer.passwords import check_strength, hash_password

            if not self.admin_password_hash:
                self.admin_password_hash = hash_password(check_strength(self.admin_password))
            self.admin_password = ""
        if self.range_articles % self.chunk_articles:
            # Ranges are cut into chunks aligned like the ranges themselves (articles.py).
            raise ValueError(
                f"range_articles ({self.range_articles}) must be a multiple of "
                f"chunk_articles ({self.chunk_articles})"
            )
        if self.nntp_host is not None and (self.nntp_user is None) != (self.nntp_password is None):
            raise ValueError("set both nntp_user and nntp_password, or neither")
        if (self.s3_access_key_id is None) != (self.s3_secret_access_key is None):
            raise ValueError(
                "set both s3_access_key_id and s3_secret_access_key, or neither (boto3's own chain)"
            )
        if self.ownership_ttl_seconds < 3 * self.ownership_renew_seconds:
            raise ValueError(
                f"ownership_ttl_seconds ({self.ownership_ttl_seconds}) must be at least 3 × "
                f"ownership_renew_seconds ({self.ownership_renew_seconds}): with less, one slow renewal "
                "loses a loop's lease or lets a live holder look dead"
            )
        if self.storage_url.startswith("s3:"):
            from usenet_indexer.storage.s3 import S3Location

            S3Location.parse(self.storage_url)
        elif "://" in self.storage_url and not self.storage_url.startswith("file:///"):
            raise ValueError(
                f"storage_url {self.storage_url!r}: s3://bucket/prefix, file:///absolute/path or a directory"
            )
        return self

    def news_servers(self) -> list[ServerSettings]:
        """The news servers as ``nntp.pool.ServerSettings``, primary first (empty: none configured)."""
        from usenet_indexer.nntp.pool import ServerSettings

        if not self.nntp_host:
            return []
        primary = ServerSettings(
            host=self.nntp_host,
            port=self.nntp_port,
            ssl=self.nntp_ssl,
            starttls=self.nntp_starttls,
            user=self.nntp_user,
            password=self.nntp_password,
            connections=self.nntp_connections,
            ca_file=self.nntp_ca_file,
            timeout=self.nntp_timeout,
            compression=self.nntp_compression,
        )
        fills = [
            ServerSettings(**{"priority": index + 1, **fill})
            for index, fill in enumerate(self.nntp_fill_servers)
        ]
        for fill in fills:
            if fill.priority < 1:
                raise ValueError(f"fill server {fill.name}: priority must be >= 1 (0 is the primary)")
        return [primary, *fills]

    def blobs_directory(self) -> Path | None:
        """The local directory blobs live in, or None for object storage."""
        url = self.storage_url
        if not url:
            return self.data_dir / "blobs"
        if url.startswith("s3:"):
            return None
        return Path(url.removeprefix("file://"))

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config = _config_file()
        if config is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=config))
        return tuple(sources)


def _config_file() -> Path | None:
    named = os.environ.get("USENET_INDEXER_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise FileNotFoundError(f"USENET_INDEXER_CONFIG names {path}, which is not a file")
        return path
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def settings_problem(error: ValueError) -> str:
    """A settings error as one line per problem, the way a person reads it: ``name: why (given: …)``
    (pydantic's own text adds a traceback's worth of types and links)."""
    if not isinstance(error, ValidationError):
        return str(error)
    lines = []
    for problem in error.errors(include_url=False):
        where = ".".join(str(part) for part in problem["loc"])
        why = str(problem["msg"]).removeprefix("Value error, ")
        given = problem.get("input")
        secret = any(word in where for word in ("password", "secret", "key", "token"))
        hidden = secret or isinstance(given, dict) or given is None
        shown = "" if hidden else f" (given: {str(given)[:80]!r})"
        lines.append(f"{where}: {why}{shown}" if where else why)
    return "; ".join(lines)


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Settings with the flags given on the command line (``None`` means "not given")."""
    if config is not None:
        os.environ["USENET_INDEXER_CONFIG"] = str(config)
    return Settings(**{key: value for key, value in overrides.items() if value is not None})
