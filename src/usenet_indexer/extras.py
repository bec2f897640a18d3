"""Optional extras: parts of usenet-indexer whose packages a plain install leaves out (pyproject.toml,
``[project.optional-dependencies]``), and the error that names the extra to install.

- ``s3``: boto3, for object storage (``storage_url = "s3://bucket/prefix"``, storage/s3.py).
"""

from __future__ import annotations


class MissingExtra(ImportError, ValueError):
    """A setting asks for a part whose extra is not installed.

    An ImportError, which it is; a ValueError as well, so that settings refuse the setting that needs
    it when they are checked (pydantic's ValidationError, with this message) — at startup, naming the
    extra, rather than as an import failing in the middle of a run."""


def missing_extra(extra: str, feature: str, package: str) -> MissingExtra:
    return MissingExtra(
        f"{feature} needs {package}, which is not installed: install usenet-indexer[{extra}] "
        f"(in a checkout: uv sync --extra {extra}; as a tool: uv tool install 'usenet-indexer[{extra}]' "
        f"or pipx install 'usenet-indexer[{extra}]')",
        name=package,
    )
