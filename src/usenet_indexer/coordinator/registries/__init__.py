"""The registries: nodes, users, groups, rules (and web UI passwords), and the operations on them
that the command line and the web admin share (operations.py)."""
