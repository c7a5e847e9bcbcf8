"""Reading a file the run was pointed at (the known issues, the test durations): only a regular file, only so much.

A named pipe waits for a writer for ever, and a device such as /dev/zero never ends: read as a file, the first hung
the run and the second was read until the process was killed for memory. Either is refused by what it is; a file
larger than any the suite writes is refused before it is read.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class NotAFile(ValueError):
    """What the path is instead of a regular file of at most the size asked ('a FIFO, not a file')."""


def kind(mode: int) -> str | None:
    """What a file that is not a regular file is ('a FIFO', 'a device', ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file")


def read_regular(path: Path | str, most: int) -> bytes:
    """The bytes of ``path`` where it is a regular file (after links) of at most ``most`` bytes; NotAFile otherwise
    (OSError where it cannot be opened). Opened without waiting, then asked what it is, so nothing swapped in between
    is read."""
    if (what := kind(os.stat(path).st_mode)) is not None:  # a socket cannot even be opened
        raise NotAFile(f"it is {what}, not a file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    if (what := kind(os.fstat(fd).st_mode)) is not None:
        os.close(fd)
        raise NotAFile(f"it is {what}, not a file")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        data = f.read(most + 1)
    if len(data) > most:
        raise NotAFile(f"it holds more than {most // 2**20} MiB, more than any the suite reads")
    return data
