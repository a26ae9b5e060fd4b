#!/usr/bin/env python3
"""What a 4 KiB write into the store's page cache costs, by how the page got
there (issue 13, docs/ATTACH_PERF.md "Fifth round").

The attach daemon's warm thread reads the units the log opens next into the
page cache before the log writes them. This measures, on a file of SIZE MiB
(default 512) under DIR (default /var/tmp, which must be on the disk the
store uses), the writers' cost per 4 KiB `pwrite` after each way of reading
a range in:

  readahead      pread 256 KiB at a time on a plain descriptor (readahead
                 brings large folios; MADV_POPULATE_READ does the same)
  single pages   pread 256 KiB at a time on a descriptor advised
                 POSIX_FADV_RANDOM (no readahead: one page per folio), what
                 the warm thread does
  not read in    the write allocates its page itself

Each range is first synced, dropped from the cache and turned into
unwritten extents (FALLOC_FL_ZERO_RANGE), as the warm thread does. Prints
per way the read-in cost and the write cost per page, and the write cost as
a ratio to "single pages" measured in the same run.
Usage: python3 bench/page_cost.py [SIZE_MIB] [DIR]
"""
import ctypes
import os
import sys
import time

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_ZERO_RANGE = 0x10
PAGE = 4096
CHUNK = 256 * 1024


def main():
    size = int(sys.argv[1]) << 20 if len(sys.argv) > 1 else 512 << 20
    where = sys.argv[2] if len(sys.argv) > 2 else "/var/tmp"
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    path = os.path.join(where, f"openvsl-page-cost-{os.getpid()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
        single = os.open(path, os.O_RDONLY)
        os.posix_fadvise(single, 0, 0, os.POSIX_FADV_RANDOM)
        page = b"\x01" * PAGE
        results = {}
        for way in ["readahead", "single pages", "not read in"]:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, size, os.POSIX_FADV_DONTNEED)
            if libc.fallocate(fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, 0, size) != 0:
                err = ctypes.get_errno()
                sys.exit(f"page_cost: {where} cannot zero a range ({os.strerror(err)}); use a directory on ext4 or xfs")
            t = time.perf_counter()
            if way != "not read in":
                src = fd if way == "readahead" else single
                for off in range(0, size, CHUNK):
                    os.pread(src, CHUNK, off)
            read_in = time.perf_counter() - t
            t = time.perf_counter()
            for off in range(0, size, PAGE):
                os.pwrite(fd, page, off)
            write = time.perf_counter() - t
            pages = size // PAGE
            results[way] = (read_in * 1e6 / pages, write * 1e6 / pages)
        base = results["single pages"][1]
        print(f"4 KiB writes into {size >> 20} MiB under {where}, by how the pages were read in:")
        for way, (r, w) in results.items():
            print(f"  {way:<13} read in {r:6.2f} us/page   write {w:6.2f} us/page   ratio to single pages {w / base:5.2f}")
        os.close(single)
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    main()
