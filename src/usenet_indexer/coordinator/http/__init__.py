"""The coordinator's HTTP side: the app (app.py), the node API, the newznab API, the web UI and its
admin, sessions, and the limits every request is held to (network.py)."""
