"""The limits and layouts the C accelerator (_speedups.c) and the Python code share are the same.

Read from the C source, not from the built module: the check holds where the extension is not built, and
catches a #define changed on one side only. Every #define of the file is either checked against its
Python twin here or listed as the C code's own, so a new limit has to be placed in one or the other.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import re
from pathlib import Path

from usenet_indexer.indexing import overview, rules
from usenet_indexer.indexing.fragment import FileFragment

from .conftest import NATIVE, needs_native

# indexing/__init__.py exports the function merge() under the module's name.
merge = importlib.import_module("usenet_indexer.indexing.merge")
SOURCE = (Path(__file__).parents[3] / "src/usenet_indexer/accelerator/_speedups.c").read_text("utf-8")

# #defines that only the C code uses, each with why it has no twin.
C_ONLY = {
    "PY_SSIZE_T_CLEAN": "asks Python.h for Py_ssize_t lengths",
    "MAX_FIELDS": "the widest LIST OVERVIEW.FMT the scan reads; the module exports it (indexer.py asks)",
    "CACHE_SIZE": "files a scan keeps pending between two calls into Python; Python keeps every file",
    "NEED": "a macro of the segment blob's reader (blob_open, blob_next)",
    "INTERN": "a macro of exec_module",
}


def defines() -> dict[str, str]:
    """Each ``#define NAME value`` of the file, the value without its comment."""
    found = {}
    for match in re.finditer(r"^#define (\w+)(\([^)]*\))?[ \t]*(.*)$", SOURCE, re.MULTILINE):
        found[match[1]] = re.sub(r"/\*.*?\*/", "", match[3]).strip()
    return found


def number(name: str) -> int:
    """The integer value of a #define: a literal or a product of literals, such as ``(8 * 1024)``."""
    return math.prod(int(factor) for factor in defines()[name].strip("()").split("*"))


def test_every_define_is_checked_or_the_c_codes_own() -> None:
    checked = {"MAX_SUBJECT", "MAX_DIGITS", "FILE_FIELDS"}
    assert set(defines()) == checked | set(C_ONLY)


def test_the_longest_subject_is_the_same() -> None:
    assert number("MAX_SUBJECT") == overview.MAX_SUBJECT


def test_the_longest_number_is_the_same() -> None:
    assert number("MAX_DIGITS") == rules.MAX_DIGITS
    assert int("9" * rules.MAX_DIGITS) < 2**63  # the reason for the limit: the C code reads into an int64


def test_file_fragments_fields_are_named_in_their_order() -> None:
    names = re.search(r"file_field_names\[FILE_FIELDS\] = \{([^}]*)\}", SOURCE)
    assert names is not None
    in_c = re.findall(r'"(\w+)"', names[1])
    assert in_c == [field.name for field in dataclasses.fields(FileFragment)]
    assert number("FILE_FIELDS") == len(in_c)


def test_the_segment_blobs_magic_and_heads_are_the_same() -> None:
    assert set(re.findall(rb'"(UIS\d)"', SOURCE.encode())) == {merge._MAGIC, merge._MAGIC_V1}
    # A file's head, as the blob's reader (blob_next) steps over it: version 1 then version 2 (with the
    # subject's length).
    heads = re.search(r"NEED\(r->v1 \? (\d+) : (\d+), \"a file's head\"\)", SOURCE)
    assert heads is not None
    assert (int(heads[1]), int(heads[2])) == (merge._FILE_V1.size, merge._FILE.size)


@needs_native
def test_the_built_module_exports_the_sources_max_fields() -> None:
    assert NATIVE is not None
    assert number("MAX_FIELDS") == NATIVE.MAX_FIELDS
