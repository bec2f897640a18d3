"""The coordinator: HTTP app (node API, newznab API, web UI) and its background loops."""
