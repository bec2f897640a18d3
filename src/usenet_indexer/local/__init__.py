"""Everything on one machine: ``run`` (the coordinator in-process, edge workers as children, a terminal
view) and ``demo`` (``run`` against the sample news server)."""
