"""Writing the reports' outputs: never over an input file, only as regular files, atomically, readable by all (0666
less the umask)."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from reports.loading import RunFileError, file_kind


def same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def refuse_special(out: Path) -> None:
    """Outputs are regular files, new or replacing a regular file: renaming a new file over a device node, a FIFO or
    a symbolic link would replace it (as root, `--out /dev/null` would replace the system's /dev/null)."""
    try:
        mode = os.lstat(out).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise RunFileError(f"refusing to write {out}: cannot inspect it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise RunFileError(f"refusing to write {out}: it is {file_kind(mode)}, and outputs are written only as regular "
                           "files (new, or replacing a regular file); choose another output path")


def refuse_inputs(outputs: list[Path], inputs: list[str | Path]) -> None:
    """An output that is one of the inputs (by path, link or hard link), or that exists and is not a regular file,
    is refused before anything is written."""
    for out in outputs:
        for given in inputs:
            if same_file(out, Path(given)):
                raise RunFileError(f"refusing to write {out}: it is the input file {given}; choose another output path")
        refuse_special(out)


def write_atomic(path: Path, text: str) -> None:
    """Write to a new temporary file beside `path`, flush it to disk, then rename it over `path`: a reader sees the
    old file or the new one, never part of one. The file is created 0666 less the umask, as open() would."""
    refuse_special(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
