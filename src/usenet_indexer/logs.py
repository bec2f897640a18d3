"""Structured logging: key=value pairs on a terminal, one JSON object per line elsewhere."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was configured: a test
    runner that swaps and closes its captured stream must not leave loggers writing to a closed one."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(level: str = "INFO", fmt: str = "auto") -> None:
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    logging.basicConfig(level=level.upper(), stream=_CurrentStderr(), format="%(message)s", force=True)
    # One line per HTTP call from the edge worker's client would drown what matters.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # boto3 (S3 storage): its INFO lines say where credentials were found, and its DEBUG lines carry
    # signed request headers; neither belongs in our logs, whatever log_level is.
    for name in ("boto3", "botocore", "s3transfer", "urllib3"):
        logging.getLogger(name).setLevel(logging.WARNING)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
