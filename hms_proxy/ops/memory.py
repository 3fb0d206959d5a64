"""Giving freed memory back to the system.

glibc's allocator keeps what a thread freed in that thread's arena, and hands it back to the
system only from the top of each heap: after one large request has been parsed and answered
in a worker thread, the server's resident set stays where that request took it, although
Python freed every object. ``malloc_trim(0)`` walks every arena and releases their free
pages. It costs a few milliseconds on a large heap, so it is called after requests whose
body was large (:data:`AFTER_BYTES`), not after every call.

glibc also raises its threshold for serving an allocation from its own mapping (given back
when freed) to the size of the largest block freed so far: after one 15 MB request body, the
next one is carved from a thread's heap, where it stays. :func:`configure`, called when a
server starts, fixes that threshold at :data:`MMAP_THRESHOLD` (what ``MALLOC_MMAP_THRESHOLD_``
would set; a value the operator set in the environment is left alone). On a C library
without these (musl, macOS) both do nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os

AFTER_BYTES = 1 << 20  # a request body from this size on is followed by release()
MMAP_THRESHOLD = 1 << 20  # blocks from this size on are mapped on their own, given back freed
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)

try:
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _trim = _libc.malloc_trim
    _trim.argtypes, _trim.restype = [ctypes.c_size_t], ctypes.c_int
    _mallopt = _libc.mallopt
    _mallopt.argtypes, _mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
except (OSError, AttributeError):  # not glibc
    _trim = _mallopt = None


def configure() -> bool:
    """At a server's start: large blocks mapped on their own (see the module doc); whether it
    was set."""
    if _mallopt is None or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    return bool(_mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def release() -> bool:
    """Hand the allocator's free pages back to the system; whether it could."""
    if _trim is None:
        return False
    _trim(0)
    return True
