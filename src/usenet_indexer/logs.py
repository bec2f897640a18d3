"""Structured logging: key=value pairs on a terminal, one JSON object per line elsewhere."""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO


@contextlib.contextmanager
def without_rich() -> Iterator[None]:
    """Imports inside see rich as not installed. structlog (``structlog.dev``, for pretty tracebacks)
    and httpx (for its command line) import rich when it is there: 75 and 100 ms of a core at the
    start of every process of ours that imports them (issue 17). Only the live view uses rich.
    pygments too, which httpx's command line imports before rich (3 ms; nothing of ours uses it)."""
    hidden = [name for name in ("rich", "pygments") if name not in sys.modules]  # imported: nothing to save
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # makes "import rich" raise ImportError
    try:
        yield
    finally:
        for name in hidden:
            del sys.modules[name]


if TYPE_CHECKING:
    import structlog
else:
    with without_rich():  # exceptions are rendered as plain tracebacks
        import structlog


class _CurrentStderr:
    """Whatever ``sys.stderr`` is when a line is written, not when logging was configured: a test
    runner that swaps and closes its captured stream must not leave loggers writing to a closed one."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _EchoWarnings:
    """A processor for logging to a file (``run``'s live view owns the terminal): warnings and errors
    are also written to the terminal, rendered for people, above the view."""

    LEVELS = frozenset({"warning", "error", "critical", "exception"})

    def __init__(self) -> None:
        self.renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())

    def __call__(self, logger: Any, method: str, event: Any) -> Any:
        if method in self.LEVELS:
            sys.stderr.write(str(self.renderer(logger, method, dict(event))) + "\n")
        return event


def configure_logging(level: str = "INFO", fmt: str = "auto", *, file: TextIO | None = None) -> None:
    """Log lines to stderr; with ``file``, to that file instead (JSON), warnings also to stderr."""
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() and file is None else "json"
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    stream: Any = _CurrentStderr() if file is None else file
    logging.basicConfig(level=level.upper(), stream=stream, format="%(message)s", force=True)
    # One line per HTTP call from the edge worker's client would drown what matters.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    # Alembic names every plugin it sets up (7 lines) each time a command applies migrations.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    # boto3 (S3 storage): its INFO lines say where credentials were found, and its DEBUG lines carry
    # signed request headers; neither belongs in our logs, whatever log_level is.
    for name in ("boto3", "botocore", "s3transfer", "urllib3"):
        logging.getLogger(name).setLevel(logging.WARNING)
    echo: list[Any] = [] if file is None else [_EchoWarnings()]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            *echo,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(stream),
        cache_logger_on_first_use=False,
    )


def get_logger(name: str) -> Any:
    return structlog.get_logger(name)
