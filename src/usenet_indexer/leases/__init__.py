"""Leases: range leases (workers), group leases (lanes) and ownership leases (coordinator loops)."""
