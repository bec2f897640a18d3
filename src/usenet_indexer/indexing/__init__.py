"""Indexing: overview lines to segments, files and releases. Pure: no I/O, no imports from I/O packages."""
