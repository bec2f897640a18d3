"""News servers of our own, for what INN2 cannot do and for the demo; not part of the indexer.

``fake_server`` is the scripted server (provider extensions, faults on request) that the tests drive;
``sample_server`` serves generated sample postings through it, for ``demo``, ``usenet-indexer
sample-server``, the tests and the benchmarks. Both ship with the package because ``demo`` needs them,
and both sit above nntp/, whose client they speak to, rather than in it.
"""
