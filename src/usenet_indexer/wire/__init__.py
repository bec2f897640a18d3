"""Wire formats between coordinator and edge workers: stream frames and batches. Pure: no I/O."""
