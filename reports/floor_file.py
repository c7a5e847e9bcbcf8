"""What a noise-floor file (reports/noise/<arch>.json) must hold before anything uses its floors.

Both `python -m reports compare --noise-floor FILE` and the suite's benchmarks (suite/tools/bench.py, the arch's file or
SUITE_NOISE_FLOOR) check a file here, so a floor that would hide a real slowdown (40%, 1e300), a malformed entry, or
another arch's or device's file is refused by name before it is used. Standard library only: the suite imports this
module (as it does gate.py, nodeids.py and failure_kinds.py, docs/design.md)."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

FORMAT = "noise-floor/1"
# The command that learns a floor file, as this copy has it: an installed copy holds this package under
# triton_portability/_root/ (reports/__init__.py's MODULE; this file imports the standard library only).
LEARN = ("python -m triton_portability.reports noise-floor" if Path(__file__).resolve().parent.parent.name == "_root"
         else "python -m reports noise-floor")
# A floor above this would hide the slowdowns a comparison exists to catch (the planted one of the driver-validation
# evidence is 25%); A/A runs on an H100 gave floors of 1-13%.
MAX_FLOOR = 0.20
# A benchmark's usual round spread and sample tail set its disturbance limits (4 times them); one above 100% would
# let any measurement pass as undisturbed. The H100's largest: spread 22%, tail 5%.
MAX_USUAL = 1.0


class FloorFileError(ValueError):
    """A noise-floor file that must not be used; the message names the file, the entry and what would be right."""


class OtherHardware(FloorFileError):
    """A well-formed noise-floor file learned on another arch or device."""


def plausible(value: Any, limit: float) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and 0 <= value <= limit


def problems(data: Any) -> list[str]:
    """Everything wrong with a noise-floor file's content, each naming its entry; empty when it can be used."""
    if not isinstance(data, dict):
        return [f"expected a JSON object, found a JSON {type(data).__name__}"]
    if data.get("format") != FORMAT:
        return [f"format is {data.get('format')!r}, expected {FORMAT!r} (a file `{LEARN}` writes)"]
    out = [f"{k!r} is {data.get(k)!r}, expected a string" for k in ("arch", "device_name")
           if not isinstance(data.get(k), str)]
    if not isinstance(data.get("learned_from", []), list):
        out.append(f"'learned_from' is {data['learned_from']!r}, expected a list of run ids")
    for k in ("default", "platform"):
        if data.get(k) is not None and not plausible(data[k], MAX_FLOOR):
            out.append(f"{k!r} floor is {data[k]!r}, expected null or a number from 0 to {MAX_FLOOR:g}")
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, dict):
        return [*out, f"'benchmarks' is {type(benchmarks).__name__}, expected an object of "
                      "'kernel|dtype|shape': {\"floor\": ...} entries"]
    for key, entry in benchmarks.items():
        if not isinstance(entry, dict):
            out.append(f"benchmark {key!r} is {entry!r}, expected an object with a 'floor'")
            continue
        if not plausible(entry.get("floor"), MAX_FLOOR):
            out.append(f"benchmark {key!r} has floor {entry.get('floor')!r}, expected a number from 0 to "
                       f"{MAX_FLOOR:g} (a larger floor hides real slowdowns)")
        for k in ("spread", "tail"):
            if entry.get(k) is not None and not plausible(entry[k], MAX_USUAL):
                out.append(f"benchmark {key!r} has {k} {entry[k]!r}, expected null or a number from 0 to "
                           f"{MAX_USUAL:g}")
    return out


def mismatch(data: dict[str, Any], arch: str | None, device_name: str | None) -> str | None:
    """Why a (checked) file does not fit runs of this arch and device, or None."""
    differ = [f"{k} {data[k]!r}, not {want!r}" for k, want in (("arch", arch), ("device_name", device_name))
              if want is not None and data[k] != want]
    return "learned on " + " and ".join(differ) if differ else None


def check(data: Any, source: str | Path, arch: str | None = None, device_name: str | None = None) -> dict[str, Any]:
    """The file's content if it is a usable noise-floor file for this arch and device (None: not checked)."""
    found = problems(data)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise FloorFileError(f"{source}: unusable noise-floor file: {found[0]}{more}")
    why = mismatch(data, arch, device_name)
    if why:
        raise OtherHardware(f"{source}: noise-floor file of other hardware: {why}; learn one for this device with "
                             f"`{LEARN}`")
    return data


# A noise-floor file is a few KiB (the H100's, 898 lines); past this it is not one (a device such as /dev/zero never ends).
MAX_BYTES = 16 * 2**20


def _read_regular(p: Path) -> str:
    """The text of ``p`` where it is a regular file (after links) of at most MAX_BYTES: a named pipe waited for a
    writer for ever. Opened without waiting, then asked what it is."""
    if (kind := _special(os.stat(p).st_mode)) is not None:  # a socket cannot even be opened
        raise FloorFileError(f"{p}: not a noise-floor file: it is {kind} (a noise-floor file is a regular file)")
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    if (kind := _special(os.fstat(fd).st_mode)) is not None:
        os.close(fd)
        raise FloorFileError(f"{p}: not a noise-floor file: it is {kind} (a noise-floor file is a regular file)")
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise FloorFileError(f"{p}: not a noise-floor file: more than {MAX_BYTES // 2**20} MiB")
    return data.decode("utf-8")


def _special(mode: int) -> str | None:
    """What a file that is not a regular file is ('a FIFO', 'a device', ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return ("a FIFO" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file")


def read(path: str | Path, arch: str | None = None, device_name: str | None = None) -> dict[str, Any]:
    """Read and check a noise-floor file; every problem is a FloorFileError naming the file."""
    p = Path(path)
    try:
        data = json.loads(_read_regular(p))
    except FloorFileError:
        raise
    except OSError as exc:
        raise FloorFileError(f"{p}: cannot read the noise-floor file: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise FloorFileError(f"{p}: not a noise-floor file: {exc}") from None
    return check(data, p, arch, device_name)
