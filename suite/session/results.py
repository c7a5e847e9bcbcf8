"""Result files: one JSON file per run, written atomically, never overwriting another run.

Case records travel from xdist workers to the controller inside each test report's
``user_properties``; the controller alone writes the run file, rewriting it whole
(temp file + rename) as reports arrive, so a run that dies midway leaves a valid
file whose ``status`` says ``incomplete``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import secrets
import socket
import stat
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "reports" / "schema" / "run.schema.json"
CASES_PROPERTY = "suite_case_records"
CEILINGS_PROPERTY = "suite_ceilings"
# user_properties keys by which tests hand records to the controller, and where they go.
RECORD_PROPERTIES = {
    "suite_compile_records": "compiles",
    "suite_benchmark_records": "benchmarks",
    "suite_finding_records": "findings",
    "suite_coverage_records": "coverage",
    CEILINGS_PROPERTY: "ceilings",
}


def json_number(x: float | None) -> float | str | None:
    """JSON has no inf or NaN: write them as strings."""
    if x is None:
        return None
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def new_run_id(backend: str, arch: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{backend}-{arch}-{secrets.token_hex(3)}"


def environment_fingerprint(backend: Any, hypothesis_profile: str, hypothesis_seed: str | int | None) -> dict[str, Any]:
    import hypothesis
    import numpy
    import torch
    import triton

    profile = backend.profile
    return {
        "backend": backend.name,
        "device_name": backend.device_name,
        "arch": backend.arch,
        "sm_count": backend.sm_count,
        "warp_size": backend.warp_size,
        "profile": getattr(profile, "key", None),
        "profile_note": backend.profile_note,
        "driver": backend.details.get("driver") or driver_from_kernel_module(getattr(backend, "family", "")),
        "runtime": backend.details.get("runtime") or _runtime(backend.name),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "triton": triton.__version__,
        "hypothesis": hypothesis.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "hypothesis_profile": hypothesis_profile,
        "hypothesis_seed": hypothesis_seed,
        "suite": suite_version(),  # a change of the suite itself is one more thing history blames a streak on
    }


def suite_version() -> str | None:
    """The suite's version: the installed distribution's, else the checkout's pyproject.toml's."""
    import importlib.metadata

    try:
        return importlib.metadata.version("triton-portability-suite")
    except importlib.metadata.PackageNotFoundError:
        pass
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    try:
        found = re.search(r'^version\s*=\s*"([^"]+)"', pyproject.read_text(encoding="utf-8"), re.MULTILINE)
    except OSError:
        return None
    return found.group(1) if found else None


# Where the GPU driver's kernel module says its version, for a host without nvidia-smi or rocm-smi (a container).
DRIVER_VERSION_FILES = {"nvidia": Path("/proc/driver/nvidia/version"), "amd": Path("/sys/module/amdgpu/version")}


def driver_from_kernel_module(family: str) -> str | None:
    """The driver's version from its kernel module ('550.54.15'; amdgpu's '6.8.5'), None where it does not say."""
    path = DRIVER_VERSION_FILES.get(family)
    try:
        text = path.read_text(errors="replace") if path is not None else ""
    except OSError:
        return None
    if family == "nvidia":  # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar 5 ..."
        found = re.search(r"Kernel Module\s+(\d[\w.-]*)", text)
        return found.group(1) if found else None
    return text.strip() or None


def _runtime(backend_name: str) -> str | None:
    """The GPU runtime torch was built with, where the backend did not say (the interpreter has none)."""
    if backend_name not in ("cuda", "rocm"):
        return None
    import torch

    hip, cuda = getattr(torch.version, "hip", None), getattr(torch.version, "cuda", None)
    return f"HIP {hip}" if hip else f"CUDA {cuda}" if cuda else None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class NotARegularFile(OSError):
    """A path the suite would write is there and is not a regular file (a link, a device, a FIFO, a directory)."""


def refuse_unless_regular(path: Path) -> None:
    """NotARegularFile where ``path`` exists and is anything but a regular file: the rename would replace a link
    (or a device node, a FIFO) with a file, and what was meant to receive the text never would."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    kind = ("a symbolic link" + (f" (to {os.readlink(path)})" if stat.S_ISLNK(mode) else "") if stat.S_ISLNK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode) else "a device node" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a directory" if stat.S_ISDIR(mode) else "not a regular file")
    raise NotARegularFile(f"refusing to write {path}: it is {kind}; the suite writes only regular files: give the "
                          f"path of a regular file, or of one that does not exist yet")


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename: a crash leaves the old file or the new
    one, never a part. The file gets the usual permissions (0666 less the umask), not mkstemp's 0600, so that
    another user (a CI uploader) can read it. Only a regular file, or a new one, is written (NotARegularFile)."""
    refuse_unless_regular(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: dict[str, Any], compact: bool = False) -> None:
    """``data`` as JSON, indented; ``compact``: on one line, through json's C encoder (an indented dump runs its
    pure-Python encoder: a run file of 174 tests, 1.2 MB, took 53-64 ms against 18-21 ms)."""
    write_atomic(path, (json.dumps(data, allow_nan=False) if compact else json.dumps(data, indent=1, allow_nan=False))
                 + "\n")


class RunFile:
    """The controller's view of the run: environment, tests, cases; flushed to disk."""

    def __init__(self, directory: Path, run_id: str, env: dict[str, Any], command: list[str]) -> None:
        self.path = Path(directory) / f"run-{run_id}.json"
        if self.path.exists():
            raise FileExistsError(f"{self.path} exists; a run never overwrites another")
        self.data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "run_id": run_id,
            "status": "incomplete",
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "finished": None,
            "command": command,
            "environment": env,
            "tests": [],
            "cases": [],
            "compiles": [],
            "benchmarks": [],
            "findings": [],
            "coverage": [],
            "known_issues": [],
        }
        self.started = False
        # Why the latest write of the file failed (a full or read-only disk), None once one succeeds: the run goes
        # on, and the file keeps what the last good write put there.
        self.write_error: str | None = None
        self.write_failures = 0
        self.tests_written = 0  # the tests the file on disk holds

    def start(self) -> None:
        """Write the file (status incomplete) on the first suite report: a session that
        runs none of the suite's tests leaves no run file behind. The path is claimed with an
        exclusive create, so a run that started since (with the same id) is never overwritten:
        this run takes a fresh id instead."""
        if self.started:
            return
        for _ in range(100):
            try:
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
                break
            except FileExistsError:
                self.data["run_id"] = f"{self.data['run_id'].rsplit('-', 1)[0]}-{secrets.token_hex(3)}"
                self.path = self.path.with_name(f"run-{self.data['run_id']}.json")
            except OSError as exc:  # the directory went read-only or full since the run began: tried again next test
                self._failed(exc)
                return
        else:
            raise FileExistsError(f"{self.path}: cannot claim a run file name in {self.path.parent}")
        self.started = True
        self.flush()

    def add_report(self, nodeid: str, outcome: str, duration: float, message: str | None,
                   records: list[dict[str, Any]], known_issue: dict | None,
                   extra: dict[str, list[dict[str, Any]]] | None = None, timing: dict | None = None,
                   place: dict | None = None) -> dict[str, Any]:
        """Add a test's record (and its cases) and rewrite the file; ``place``: the worker that ran it and when
        (seconds from the session's start). Returns the test's record."""
        self.start()
        for key, items in (extra or {}).items():
            if key == "ceilings":
                self.data["ceilings"] = items
            else:
                self.data[key].extend(items)
        test = {"nodeid": nodeid, "outcome": outcome, "duration_s": round(duration, 4), "message": message,
                "known_issue": known_issue["id"] if known_issue else None, **({"timing": timing} if timing else {}),
                **(place or {})}
        self.data["tests"].append(test)
        for record in records:
            # A test its known issue excused: its failed cases are the issue's. A test that failed though a known
            # issue was declared keeps its failed case as failed (the summary listed it as XFAILED beside a FAILED
            # verdict, the case the issue does not describe).
            if known_issue and outcome == "xfailed" and record["outcome"] == "failed":
                record = {**record, "outcome": "xfailed", "known_issue": known_issue["id"]}
            self.data["cases"].append(record)
        self.flush()
        return test

    def flush(self, final: bool = False) -> None:
        """Rewrite the file after every test report: a crash loses at most the test in flight. On one line until the
        run's end (``finish`` writes it indented): the xdist controller rewrites it after every test, between handing
        tests to its workers, and the indented dump of a growing file left a warm GPU run's workers waiting for their
        next test towards the run's end (0.2-0.8 s between tests on an H100)."""
        if not self.started:
            return
        try:
            if final:
                write_json_atomic(self.path, self.data)
            else:
                write_json_atomic(self.path, self.data, compact=True)
        except OSError as exc:
            self._failed(exc)
        else:
            self.write_error = None
            self.tests_written = len(self.data["tests"])

    def _failed(self, exc: OSError) -> None:
        self.write_failures += 1
        self.write_error = f"cannot write the run file {self.path}: {exc.strerror or exc}"

    def finish(self, status: str) -> None:
        self.data["status"] = status
        self.data["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self.flush(final=True)


def command_line() -> list[str]:
    return [os.path.basename(sys.argv[0])] + sys.argv[1:]
