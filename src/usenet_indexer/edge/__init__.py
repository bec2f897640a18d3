"""Edge workers: lease ranges, stream chunks, index, post batches."""
