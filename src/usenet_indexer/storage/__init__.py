"""Storage: the spool, the corpus and snapshots, as immutable blobs in one BlobStore (blobs.py).

Each blob is stored whole or not at all: a file in the data directory (a temporary file renamed into
place) or an object in S3 (one PutObject, or a multipart upload completed on commit; s3.py).
"""
