"""NNTP: a sans-I/O protocol core and an asyncio transport."""
