"""The catalog: releases stored from batches, search, NZB files, categories."""
