"""The ``usenet-indexer`` command."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False, help="A distributed Usenet binary indexer.")


def main() -> None:
    app()
