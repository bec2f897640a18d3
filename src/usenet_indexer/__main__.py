"""``python -m usenet_indexer`` and the ``usenet-indexer`` command."""

from __future__ import annotations


def main() -> None:
    from usenet_indexer.runtime import quiet_start

    quiet_start()  # before the imports: runtime.py
    from usenet_indexer.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
