"""The suite's command-line options, and their validation.

Every value is checked in ``pytest_configure``, before any test runs: a bad value is a usage error
(pytest's exit code 4) that names the option, the value and what would be right. What needs the
kernel registry (kernel names, ``--repro`` against a kernel's dims, ``--config`` keys) is checked as
soon as the registry is loaded, still before the first test.
"""

from __future__ import annotations

import difflib
import errno
import fnmatch
import json
import math
import os
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from suite.session import backend as backend_mod
from suite.session import known_issues as known_mod
from suite.session import terminal

DEFAULT_CASE_TIMEOUT_S = 300.0
# How many more times a case that gave a wrong result runs, to tell a deterministic failure from an intermittent one
# (env SUITE_INTERMITTENT_RUNS).
DEFAULT_INTERMITTENT_RUNS = 20
# How long a case that runs alone after an out-of-memory error waits for the other workers' caches (env
# SUITE_DRAIN_WAIT_S; suite/workers/gpu_share.py).
DEFAULT_DRAIN_WAIT_S = 60.0
DEFAULT_RESULTS_DIR = "runs"


COMPILE_TARGETS = ("all", "own")


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("portability", "Triton portability suite")
    group.addoption("--backend", default="auto", choices=backend_mod.BACKENDS,
                    help="where kernels run: auto (default: a GPU if torch sees one, else the CPU interpreter), "
                         "interpret, cuda, rocm")
    group.addoption("--results-dir", default=os.environ.get("SUITE_RESULTS_DIR", "runs"),
                    help="directory for the run's result file (default runs; env SUITE_RESULTS_DIR)")
    group.addoption("--no-results", action="store_true", help="write no result file")
    group.addoption("--repro", default=None, metavar="CASE",
                    help="run exactly one case instead of Hypothesis examples, as printed in a failure's "
                         "reproduction line (e.g. 'M=3,N=17;layout=contiguous;values=normal;seed=1')")
    group.addoption("--repro-runs", default=None, metavar="N",
                    help="run the --repro case N times (default 1) and fail if any run is wrong, saying in how many "
                         "of the N: an intermittent failure's reproduction line carries it")
    group.addoption("--config", default=None, metavar="JSON",
                    help="run every case with this config (meta-parameters and launch options, a JSON object) "
                         "instead of the autotune cache's or the default; reproduction lines carry it")
    group.addoption("--kernel-module", action="append", default=[], metavar="MODULE",
                    help="also register kernels from this module (dotted name or path to a .py file); repeatable")
    group.addoption("--kernels", default=None, metavar="NAMES",
                    help="run only these registered kernels: comma-separated names or glob patterns "
                         "(e.g. 'softmax,liger_*'); filters every test")
    group.addoption("--known-issues", default=str(known_mod.DEFAULT_PATH), metavar="FILE",
                    help="known-issue registry (JSON)")
    group.addoption("--strict-known-issues", action="store_true",
                    help="a known issue no case of the run meets fails its test (XPASS(strict)): to be told when a "
                         "bug is fixed. Default: the verdict names it 'not met in this run', and the run passes")
    group.addoption("--retune", nargs="?", const="*", default=None, metavar="KERNELS",
                    help="before the tests, time every valid config of these kernels (comma-separated; all when "
                         "no value is given) on the benchmark shapes and rewrite this arch's autotune cache")
    group.addoption("--retune-check", nargs="?", const="*", default=None, metavar="KERNELS",
                    help="before the tests, time every valid config of these kernels (all when no value is given) on "
                         "the benchmark shapes, write nothing into the shipped caches, and record in the run file "
                         f"each cached winner that now loses to another config (the toolchain gate: `{REPORTS} "
                         "compare` flags them)")
    group.addoption("--autotune-dir", default=None, metavar="DIR",
                    help="directory of the per-arch autotune caches (default hardware_profiles/autotune; "
                         "env SUITE_AUTOTUNE_DIR)")
    group.addoption("--case-timeout", default=None, metavar="SECONDS",
                    help=f"end a case (and its worker process) that runs longer than this: a hung kernel "
                         f"(default {DEFAULT_CASE_TIMEOUT_S:g}; 0: no limit; env SUITE_CASE_TIMEOUT)")
    group.addoption("--memcheck", action="store_true",
                    help="GPU backends: rerun this run under the vendor's memory checker (compute-sanitizer memcheck on "
                         "NVIDIA, Triton's AddressSanitizer build on AMD); the interpreter checks every case anyway")
    group.addoption("--no-memcheck", action="store_true",
                    help="interpreter: do not check each load and store against the launch's tensors (timing only)")
    group.addoption("--compile-targets", default=os.environ.get("SUITE_COMPILE_TARGETS"), choices=COMPILE_TARGETS,
                    help="the compile matrix's targets: all (every profiled arch of both vendors) or own (this "
                         "runner's arch only: the offline-versus-loaded check; the full matrix is the CPU CI's; a usage "
                         "error on the interpreter, which has no arch of its own). "
                         "Default: all on the interpreter, own on a GPU (env SUITE_COMPILE_TARGETS)")
    group.addoption("--hypothesis-db", default=os.environ.get("SUITE_HYPOTHESIS_DB"), metavar="DIR",
                    help="Hypothesis example database shared across runs (env SUITE_HYPOTHESIS_DB): failing "
                         "examples are saved there and replayed first; used by the dev and nightly profiles")
    group.addoption("--shard", default=None, metavar="I/N",
                    help="run only the I-th of N parts of the selected tests (1-based), balanced by their expected "
                         "durations: one arch's run over N runners (docs/gpu-runners.md)")
    group.addoption("--export-failures", default=None, metavar="DIR",
                    help="for each failing case of a reference test, write a folder under DIR whose repro.py reruns it "
                         "with torch and triton alone (the exact inputs, the outputs it produced, the float64 "
                         "reference and the bound) and exits 1 while the kernel is wrong, 0 once it is right")
    group.addoption("--numerics", default=None, metavar="PROFILE",
                    help="interpreter only: tl.dot bit for bit as this profile's matrix cores compute it "
                         "(h100_sxm, mi300x, ...); the verdict says 'modelled as PROFILE'")
    group.addoption("--run-id", default=None, metavar="ID",
                    help="the run this run file belongs to, the same on every shard of it (env SUITE_RUN_ID; default: "
                         "GITHUB_RUN_ID-GITHUB_RUN_ATTEMPT on GitHub Actions, else a fresh one)")


@dataclass(frozen=True)
class Options:
    """The validated option values."""

    backend: str
    results_dir: Path
    write_results: bool
    repro: str | None
    config: dict[str, Any] | None
    kernel_modules: tuple[str, ...]
    kernels: tuple[str, ...] | None  # names or glob patterns
    known_issues: Path
    retune: tuple[str, ...] | None  # ("*",) for all
    autotune_dir: Path | None
    case_timeout: float
    case_timeout_given: bool
    hypothesis_db: Path | None
    repro_runs: int = 1
    export_failures: Path | None = None  # --export-failures=DIR
    memcheck: bool = False
    no_memcheck: bool = False
    compile_targets: str | None = None  # all, own, or None: the backend's default
    shard: tuple[int, int] | None = None  # (I, N), one-based, from --shard=I/N
    retune_check: tuple[str, ...] | None = None  # --retune-check: ("*",) for all
    run_id: str | None = None  # --run-id or SUITE_RUN_ID as given (shared_run_id derives one where not)
    started_in: str | None = None  # the directory the run started in: relative --kernel-module paths are from there
    numerics: str | None = None  # --numerics=PROFILE: the hardware profile whose tl.dot arithmetic is modelled

    def compile_targets_for(self, backend_name: str) -> str:
        return self.compile_targets or ("all" if backend_name == "interpret" else "own")

    def selects(self, kernel: str) -> bool:
        return self.kernels is None or any(fnmatch.fnmatchcase(kernel, p) for p in self.kernels)


def usage(option: str, value: Any, problem: str) -> pytest.UsageError:
    shown = str(value)
    if len(shown) > 160:  # a name too long to use is too long to read: its ends say which it is
        shown = f"{shown[:80]}...({len(shown)} characters)...{shown[-40:]}"
    return pytest.UsageError(terminal.visible(f"{option}={shown}: {problem}"))  # a value may hold an escape sequence


def usable_path(option: str, value: str) -> None:
    """A path the run will read or write can be looked up: a name over the system's limit (255 bytes a file or
    directory name, on Linux) is a usage error now, not an OSError from deep inside the run. A path that does not
    exist yet is fine here (each option says whether it must)."""
    try:
        os.stat(value)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        long = exc.errno == errno.ENAMETOOLONG
        raise usage(option, value, f"cannot be used: {exc.strerror or exc}" + (
            " (a file or directory name in it is over 255 bytes, or the whole path over 4096)" if long else "")) from None


def triton_cache_dir() -> tuple[str, Path]:
    """(how to name it, where): Triton's on-disk cache of compiled kernels, as triton.knobs finds it."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return "TRITON_CACHE_DIR", Path(os.environ["TRITON_CACHE_DIR"])
    home = os.environ.get("TRITON_HOME") or os.path.expanduser("~/")
    return "Triton's cache directory (TRITON_CACHE_DIR unset)", Path(home) / ".triton" / "cache"


def _non_empty(option: str, value: str | None, example: str) -> str | None:
    if value is not None and not value.strip():
        raise usage(option, "", f"empty value; give {example}, or leave the option out")
    return value.strip() if value is not None else None


def _names(option: str, value: str | None, example: str) -> tuple[str, ...] | None:
    value = _non_empty(option, value, example)
    if value is None:
        return None
    names = tuple(n.strip() for n in value.split(","))
    if not all(names):
        raise usage(option, value, f"an empty name between commas; give {example}")
    return names


def _count(option: str, raw: str, least: int, what: str, most: int | None = None) -> int:
    try:
        value = int(raw.strip())
    except ValueError:
        value = least - 1
    if value < least or (most is not None and value > most):
        bound = f">= {least}" if most is None else f"from {least} to {most}"
        raise usage(option, raw, f"must be a whole number {bound} ({what})")
    return value


# Upper bounds on counts a run would otherwise act on until it is killed: --repro-runs=10**20 runs the case for ever,
# --shard=1/10**20 deals the tests out into that many parts in memory.
MOST_REPRO_RUNS = 10_000
MOST_INTERMITTENT_RUNS = 1_000
MOST_SHARDS = 4_096


SHARD = re.compile(r"([0-9]+)/([0-9]+)")  # ASCII digits, nothing around them: fullmatch
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def parse_shard(raw: str | None) -> tuple[int, int] | None:
    """(I, N) from ``--shard=I/N``: 1 <= I <= N."""
    if raw is None:
        return None
    m = SHARD.fullmatch(raw)
    if m is None:  # '١/٢' and ' 1/2' were taken as 1/2
        raise usage("--shard", raw, f"not I/N (given {raw!r}); give this runner's part and the number of parts, "
                                    f"1-based, in ASCII digits with nothing around them, e.g. --shard=2/3")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise usage("--shard", raw, "the number of parts N must be at least 1 (e.g. --shard=1/2)")
    if count > MOST_SHARDS:
        raise usage("--shard", raw, f"the number of parts N must be at most {MOST_SHARDS} (one part per runner)")
    if not 1 <= index <= count:
        raise usage("--shard", raw, f"the part I must be from 1 to {count} (1-based: --shard=1/{count} is the first)")
    return index, count


def check_hypothesis_profile(config: pytest.Config) -> None:
    """``--hypothesis-profile`` names a registered profile: a usage error naming the profiles (and the nearest one), before
    Hypothesis's own plugin loads it and stops the run with an INTERNALERROR."""
    name = config.getoption("--hypothesis-profile", default=None)
    if name is None:
        return
    from hypothesis import settings

    known = sorted(settings._profiles)  # noqa: SLF001 (Hypothesis has no public list of registered profiles)
    if name in known:
        return
    near = [k for k in known if k.lower() == str(name).lower()] or __import__("difflib").get_close_matches(
        str(name), known, n=1)
    hint = f"; did you mean {near[0]}?" if near else ""
    raise usage("--hypothesis-profile", name, f"no such profile: the suite's are {', '.join(known)}{hint}")


def parse_run_id(raw: str | None, source: str = "--run-id") -> str | None:
    """``--run-id``, else SUITE_RUN_ID, as given: letters, digits, '.', '_' and '-', at most 128."""
    if raw is None and source == "--run-id":
        raw, source = os.environ.get("SUITE_RUN_ID"), "SUITE_RUN_ID"
    if raw is None or (source == "SUITE_RUN_ID" and not raw.strip()):
        return None
    value = raw.strip()
    if not RUN_ID.match(value):
        raise usage(source, raw, "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit "
                                 "(e.g. nightly-1234-1): the same on every shard of the run")
    return value


def shared_run_id(given: str | None, environ: dict[str, str] | None = None) -> str:
    """The run id all shards of a run share: ``given`` (--run-id, SUITE_RUN_ID); else, on GitHub Actions,
    ``gh-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>`` (every job of one workflow run has the same); else a fresh one (so
    shards run by hand need --run-id to be merged)."""
    if given:
        return given
    env = os.environ if environ is None else environ
    run, attempt = env.get("GITHUB_RUN_ID", "").strip(), env.get("GITHUB_RUN_ATTEMPT", "").strip()
    if run.isdigit():
        return f"gh-{run}-{attempt if attempt.isdigit() else '1'}"
    import uuid

    return uuid.uuid4().hex


def intermittent_runs() -> int:
    """How many more times a case that gave a wrong result runs (SUITE_INTERMITTENT_RUNS, else the default)."""
    raw = os.environ.get("SUITE_INTERMITTENT_RUNS")
    if raw is None or not raw.strip():
        return DEFAULT_INTERMITTENT_RUNS
    return _count("SUITE_INTERMITTENT_RUNS", raw, 1, "how many more times a case that gave a wrong result runs, to "
                                                     "tell a deterministic failure from an intermittent one",
                  MOST_INTERMITTENT_RUNS)


WORKERS_PER_GPU_ENV = "SUITE_WORKERS_PER_GPU"


def workers_per_gpu() -> int:
    """How many xdist workers share this process's GPU (SUITE_WORKERS_PER_GPU, set by the controller for its
    workers; 1 where unset)."""
    raw = os.environ.get(WORKERS_PER_GPU_ENV)
    if raw is None or not raw.strip():
        return 1
    return _count(WORKERS_PER_GPU_ENV, raw, 1, "how many xdist workers share each GPU; the suite sets it for its "
                                              "own workers: unset it")


def drain_wait_s() -> float:
    """How long a case that runs alone waits for the other workers' memory (SUITE_DRAIN_WAIT_S, default 60 s)."""
    raw = os.environ.get("SUITE_DRAIN_WAIT_S")
    if raw is None or not raw.strip():
        return DEFAULT_DRAIN_WAIT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise usage("SUITE_DRAIN_WAIT_S", raw, "must be a finite number of seconds >= 0: how long a case that runs "
                                               "alone after an out-of-memory error waits for the other workers' memory")
    return value


def case_timeout(raw: str | None) -> tuple[float, bool]:
    """(seconds, given): from --case-timeout, else SUITE_CASE_TIMEOUT, else the default; 0 means no limit."""
    source = "--case-timeout"
    if raw is None:
        raw, source = os.environ.get("SUITE_CASE_TIMEOUT"), "SUITE_CASE_TIMEOUT"
        if raw is None:
            return DEFAULT_CASE_TIMEOUT_S, False
    try:
        value = float(raw)
    except ValueError:
        raise usage(source, raw, "not a number of seconds (e.g. 300; 0 for no limit)") from None
    if not math.isfinite(value) or value < 0:
        raise usage(source, raw, "must be a finite number of seconds >= 0 (0 for no limit); a negative, NaN or "
                                 "infinite value would silently disable the hang watchdog")
    return value, True


def writable_directory(option: str, path: Path) -> None:
    """Create ``path`` if needed and prove a file can be written there, now rather than at the end of the run."""
    usable_path(option, str(path))
    if path.exists() and not path.is_dir():
        raise usage(option, path, "exists and is not a directory")
    if dangling := next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None):
        raise usage(option, path, f"{'it' if dangling == path else dangling} is a dangling symbolic link (to "
                                  f"{os.readlink(dangling)}, which does not exist): create the directory it names, "
                                  f"or give another")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".suite-probe-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise usage(option, path, f"cannot write there: {exc.strerror or exc}") from None


def makeable_directory(option: str, path: Path) -> None:
    """``path`` is a directory the run can write in, or can make where it is not yet: proven now, leaving nothing
    behind (the directory itself is made when a case first needs it)."""
    usable_path(option, str(path))
    if dangling := next((p for p in (path, *path.parents) if p.is_symlink() and not p.exists()), None):
        raise usage(option, path, f"{'it' if dangling == path else dangling} is a dangling symbolic link (to "
                                  f"{os.readlink(dangling)}, which does not exist): create the directory it names, "
                                  f"or give another")
    there = next(p for p in (path, *path.parents) if p.exists())
    if not there.is_dir():
        raise usage(option, path, f"cannot make the directory there: {there} is not a directory")
    try:
        if there == path:
            fd, probe = tempfile.mkstemp(prefix=".suite-probe-", dir=path)
            os.close(fd)
            os.unlink(probe)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".suite-probe-", dir=there))
    except OSError as exc:
        raise usage(option, path, f"cannot {'write' if there == path else 'make the directory'} there: "
                                  f"{exc.strerror or exc} (in {there})") from None


def parse_config(raw: str | None) -> dict[str, Any] | None:
    raw = _non_empty("--config", raw, 'a JSON object such as \'{"BLOCK_SIZE": 256, "num_warps": 4}\'')
    if raw is None:
        return None
    def no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for key, value in pairs:
            if key in seen:  # JSON's reader would keep the last silently
                raise usage("--config", raw, f"{key!r} is given twice ({json.dumps(seen[key])}, then "
                                             f"{json.dumps(value)}); give each key once")
            seen[key] = value
        return seen

    try:
        value = json.loads(raw, object_pairs_hook=no_key_twice)
    except json.JSONDecodeError as exc:
        raise usage("--config", raw, f"not JSON ({exc.msg} at column {exc.colno}); give an object such as "
                                     f"'{{\"BLOCK_SIZE\": 256}}'") from None
    except RecursionError:
        raise usage("--config", raw, "nested too deeply to read; give a flat object such as "
                                     "'{\"BLOCK_SIZE\": 256}'") from None
    if not isinstance(value, dict) or not value:
        raise usage("--config", raw, "must be a non-empty JSON object of meta-parameters and launch options")
    bad = [k for k, v in value.items() if not isinstance(v, (bool, int, float, str))]
    if bad:
        raise usage("--config", raw, f"values of {bad} must be numbers, booleans or strings")
    # JSON's reader takes NaN, Infinity and 1e400 (inf): no meta-parameter or launch option is one.
    if bad := [k for k, v in value.items() if isinstance(v, float) and not math.isfinite(v)]:
        raise usage("--config", raw, f"values of {bad} are not finite numbers (NaN, Infinity or past a double's "
                                     f"range); give the whole numbers the kernel takes")
    return value


def read(config: pytest.Config, controller: bool) -> Options:
    """Validate every option; pytest.UsageError for the first bad one. ``controller``: this process writes the run
    file and prepares directories (xdist workers only read)."""
    get = config.getoption
    results_dir = _non_empty("--results-dir", get("--results-dir"), "a directory for the run file")
    write_results = not get("--no-results") and not config.option.collectonly
    if controller and write_results:
        writable_directory("--results-dir", Path(results_dir))
    if controller:  # every compile of every kernel goes through it: unwritable, each would fail as the kernel's fault
        name, cache_dir = triton_cache_dir()
        writable_directory(name, cache_dir)
    repro = _non_empty("--repro", get("--repro"), "a case as printed in a reproduction line")
    if repro is not None:
        from kernels.spec import Case

        try:
            Case.parse("?", "?", repro)  # the syntax; the fit to a kernel is checked per test at collection
        except ValueError as exc:
            raise pytest.UsageError(str(exc)) from None
    modules = tuple(get("--kernel-module"))
    if any(not m.strip() for m in modules):
        raise usage("--kernel-module", "", "empty value; give a dotted module name or a path to a .py file")
    for module in modules:
        usable_path("--kernel-module", module)
    known = _non_empty("--known-issues", get("--known-issues"), "a known-issue JSON file")
    usable_path("--known-issues", known)
    retune = _names("--retune", get("--retune"), "kernel names, or --retune alone for every kernel")
    retune_check = _names("--retune-check", get("--retune-check"),
                          "kernel names, or --retune-check alone for every kernel")
    if retune and retune_check:
        raise usage("--retune-check", ",".join(retune_check), "cannot be used with --retune (one rewrites the cache, "
                                                              "the other checks it and writes nothing): give one")
    autotune_dir = _non_empty("--autotune-dir", get("--autotune-dir"), "a directory of per-arch autotune caches")
    if autotune_dir is not None:
        usable_path("--autotune-dir", autotune_dir)
        path = Path(autotune_dir)
        if path.exists() and not path.is_dir():
            raise usage("--autotune-dir", autotune_dir, "exists and is not a directory")
        if not path.exists() and not retune:
            raise usage("--autotune-dir", autotune_dir, "no such directory (a typo would silently run every "
                                                        "kernel with its default config); --retune creates one")
    elif env_dir := os.environ.get("SUITE_AUTOTUNE_DIR"):  # read by suite/checks/autotune.py (empty: unset)
        env_path = Path(env_dir)
        usable_path("SUITE_AUTOTUNE_DIR", env_dir)
        if env_path.exists() and not env_path.is_dir():
            raise usage("SUITE_AUTOTUNE_DIR", env_dir, "exists and is not a directory")
        if not env_path.exists() and not retune:
            raise usage("SUITE_AUTOTUNE_DIR", env_dir, "no such directory (a typo would silently run every kernel "
                                                       "with its default config); unset it for the shipped caches, "
                                                       "or --retune creates one")
    db = _non_empty("--hypothesis-db", get("--hypothesis-db"), "a directory for the example database")
    if db is not None:
        usable_path("--hypothesis-db", db)
    if db is not None and Path(db).exists() and not Path(db).is_dir():
        raise usage("--hypothesis-db", db, "exists and is not a directory (Hypothesis keeps one file per example "
                                           "in a directory)")
    targets = (get("--compile-targets") or "").strip().lower() or None
    if targets is not None and targets not in COMPILE_TARGETS:  # the environment variable bypasses choices=
        raise usage("SUITE_COMPILE_TARGETS", targets, f"must be one of {', '.join(COMPILE_TARGETS)}")
    timeout, given = case_timeout(get("--case-timeout"))
    repro_runs = get("--repro-runs")
    repro_runs = 1 if repro_runs is None else _count("--repro-runs", repro_runs, 1, "how many times the --repro case "
                                                                                   "runs", MOST_REPRO_RUNS)
    if repro_runs > 1 and repro is None:
        raise usage("--repro-runs", repro_runs, "needs --repro, the case to run (as printed in a reproduction line)")
    intermittent_runs()
    drain_wait_s()
    workers_per_gpu()
    if (shrink := os.environ.get("SUITE_SHRINK_SECONDS")) is not None:
        try:
            ok = math.isfinite(float(shrink)) and float(shrink) >= 0
        except ValueError:
            ok = False
        if not ok:
            raise usage("SUITE_SHRINK_SECONDS", shrink, "must be a finite number of seconds >= 0 (how long Hypothesis may "
                                                        "shrink a failing case)")
    export = _non_empty("--export-failures", get("--export-failures"), "a directory for the failing cases' folders")
    if export is not None:
        usable_path("--export-failures", export)
        if Path(export).exists() and not Path(export).is_dir():
            raise usage("--export-failures", export, "exists and is not a directory")
        if controller:  # it was warned about once per failing case, at the end of each test
            makeable_directory("--export-failures", Path(export))
    f32_default()
    if get("--memcheck") and get("--no-memcheck"):
        raise pytest.UsageError("--memcheck and --no-memcheck: give one (--memcheck checks a GPU run under the vendor's "
                                "checker; --no-memcheck turns the interpreter's check off)")
    # Absolute now, before any kernel module imports: one that changes directory as it imports must not move the run
    # file, the known issues or the caches somewhere else.
    return Options(
        backend=get("--backend"), results_dir=_absolute(results_dir), write_results=write_results, repro=repro,
        config=parse_config(get("--config")), kernel_modules=modules,
        kernels=_names("--kernels", get("--kernels"), "comma-separated kernel names or patterns, e.g. "
                                                      "--kernels='softmax,matmul*'"),
        known_issues=_absolute(known), retune=retune, autotune_dir=_absolute(autotune_dir) if autotune_dir else None,
        case_timeout=timeout, case_timeout_given=given, hypothesis_db=_absolute(db) if db else None, repro_runs=repro_runs,
        memcheck=bool(get("--memcheck")), no_memcheck=bool(get("--no-memcheck")), compile_targets=targets,
        shard=parse_shard(get("--shard")), run_id=parse_run_id(get("--run-id")), started_in=os.getcwd(),
        retune_check=retune_check, export_failures=_absolute(export) if export else None,
        numerics=parse_numerics(get("--numerics")))


def parse_numerics(raw: str | None) -> str | None:
    """``--numerics=PROFILE``: a shipped hardware profile whose arch's matrix arithmetic is modelled
    (suite/session/numerics_table.py); a usage error naming the valid profiles, or what is not modelled."""
    if raw is None:
        return None
    import hardware_profiles
    from suite.session import numerics_table

    profiles = hardware_profiles.load_all()
    valid = sorted(k for k, p in profiles.items() if numerics_table.model_for(p.arch))
    name = raw.strip()
    if name not in profiles:
        near = difflib.get_close_matches(name, list(profiles), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise usage("--numerics", raw, f"no such hardware profile{hint}: the modelled ones are {', '.join(valid)} "
                                       f"(hardware_profiles/profiles/)")
    arch = profiles[name].arch
    if numerics_table.model_for(arch) is None:
        why = numerics_table.UNMODELLED.get(arch, f"no model of {arch}'s matrix arithmetic")
        raise usage("--numerics", raw, f"{name} ({arch}) is not modelled: {why}; modelled profiles: "
                                       f"{', '.join(valid)}")
    return name


# TRITON_F32_DEFAULT: the input precision of an fp32 tl.dot that names none (Triton's allowed_dot_input_precisions,
# NVIDIA's and AMD's together; a backend that lacks one, tf32 on gfx90a, says so when it compiles).
F32_DEFAULTS = ("ieee", "tf32", "tf32x3", "bf16x3", "bf16x6")


def f32_default() -> str | None:
    """TRITON_F32_DEFAULT as set (lowercase), or None: a value Triton does not know would fail every fp32 tl.dot of
    the run, each blamed on its kernel, and the reproduction lines do not carry it: a usage error."""
    raw = os.environ.get("TRITON_F32_DEFAULT")
    if raw is None or not raw.strip():
        return None
    if raw.strip().lower() not in F32_DEFAULTS:
        raise usage("TRITON_F32_DEFAULT", raw, f"not an input precision Triton knows: give one of "
                                               f"{', '.join(F32_DEFAULTS)}, or unset it (the backend's own default)")
    return raw.strip().lower()


def _absolute(path: str) -> Path:
    """The path from the directory the run started in (links kept as given: the run file's path says what was asked)."""
    return Path(os.path.abspath(path))


def check_against_registry(options: Options, specs: list[Any]) -> None:
    """Kernel names and patterns, --retune names and --config keys, once the registry is loaded."""
    from suite.session.kernel_names import BUILTIN_DIR, did_you_mean

    names = sorted(s.name for s in specs)
    registered = ", ".join(names)
    searched = " and ".join([str(BUILTIN_DIR), *(f"--kernel-module={m}" for m in options.kernel_modules)])
    for pattern in options.kernels or ():
        if not fnmatch.filter(names, pattern):
            raise usage("--kernels", ",".join(options.kernels), f"{pattern!r} matches no registered kernel (searched "
                                                                f"{searched}){did_you_mean(pattern, names) or '.'} "
                                                                f"Registered: {registered}")
    for option, given in (("--retune", options.retune), ("--retune-check", options.retune_check)):
        for name in given or ():
            if name != "*" and name not in names:
                raise usage(option, ",".join(given), f"no kernel named {name!r}{did_you_mean(name, names) or '.'} "
                                                     f"Registered: {registered}")


# What a launch option may be, whatever the kernel (Triton's own rules; a value outside them fails the launch, blamed
# on the kernel): (test, what would be right).
LAUNCH_VALUES: dict[str, tuple[Any, str]] = {
    "num_warps": (lambda v: v in (1, 2, 4, 8, 16, 32), "a power of two from 1 to 32"),
    "num_stages": (lambda v: v >= 0, "a whole number from 0"),
    "num_ctas": (lambda v: v >= 1, "a whole number from 1"),
    "maxnreg": (lambda v: v >= 1, "a whole number from 1"),
    "waves_per_eu": (lambda v: v >= 0, "a whole number from 0"),
    "matrix_instr_nonkdim": (lambda v: v in (0, 4, 16, 32), "0, 4, 16 or 32"),
    "kpack": (lambda v: v in (1, 2), "1 or 2"),
}


# Triton's largest block, in elements (triton.language.core.TRITON_MAX_TENSOR_NUMEL): a larger tl.arange does not
# compile, and the kernel's test would fail for the option's sake.
MOST_BLOCK = 1 << 20


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def config_problem(spec: Any, config: dict[str, Any]) -> str | None:
    """Why ``--config`` cannot apply to ``spec``, or None: a parameter its configs never use; a value of another type
    than its configs give the parameter (true, 1.5 or "64" where they give whole numbers); a value no config of it
    could hold (0 or 100 where every config gives a power of two, 0 where every one gives a positive number); a
    launch option outside Triton's rules (num_warps 3)."""
    from kernels.spec import LAUNCH_OPTIONS

    known = set(LAUNCH_OPTIONS)
    given: dict[str, list[Any]] = {}
    for family_configs in [*spec.configs.values(), tuple(spec.default_config.values())]:
        for cfg in family_configs:
            known |= set(cfg)
            for key, value in cfg.items():
                given.setdefault(key, []).append(value)
    if unknown := sorted(set(config) - known):
        return f"kernel {spec.name!r} has no parameter(s) {unknown}; its configs use {sorted(known)}"
    for key, value in config.items():
        shown = f"{key} is {json.dumps(value)}"
        if key in LAUNCH_VALUES:
            test, right = LAUNCH_VALUES[key]
            if not _whole(value) or not test(value):
                return f"{shown}; a launch's {key} is {right}"
            continue
        values = given.get(key, [])
        if values and all(_whole(v) for v in values):
            if not _whole(value):
                return f"{shown}; kernel {spec.name!r} gives it whole numbers ({_some(values)})"
            if all(v > 0 and v & (v - 1) == 0 for v in values) and not (
                    value > 0 and value & (value - 1) == 0 and value <= MOST_BLOCK):
                return (f"{shown}; every config of kernel {spec.name!r} gives it a power of two ({_some(values)}): a "
                        f"block size, which tl.arange needs to be one, of at most {MOST_BLOCK} elements (Triton's "
                        f"largest block)")
            if all(v > 0 for v in values) and value <= 0:
                return f"{shown}; every config of kernel {spec.name!r} gives it a positive number ({_some(values)})"
        elif values and not any(type(v) is type(value) for v in values):
            return (f"{shown}; kernel {spec.name!r} gives it {', '.join(sorted({type(v).__name__ for v in values}))} "
                    f"values ({_some(values)})")
    return None


def _some(values: list[Any]) -> str:
    distinct = sorted(set(values), key=lambda v: (str(type(v)), v))
    return ", ".join(json.dumps(v) for v in distinct[:6]) + (", ..." if len(distinct) > 6 else "")


LAUNCHER_ENV = "SUITE_LAUNCHER"
# The reports' command line as this copy has it: an installed copy holds the suite's packages under
# triton_portability/_root/, where only `python -m triton_portability.reports` finds them (reports/__init__.py's MODULE).
REPORTS = ("python -m triton_portability.reports" if Path(__file__).resolve().parents[2].name == "_root"
           else "python -m reports")


def typed_command(path: str, names: tuple[str, ...]) -> str:
    """How to type ``path`` (an interpreter or the pytest script): its bare name where the shell finds this very
    file by it (an activated environment), else its path relative to the working directory (``.venv/bin/python``
    in a checkout), else the whole path."""
    import shutil

    try:
        path = os.path.abspath(path)
        for name in names:
            found = shutil.which(name)
            if found and os.path.abspath(found) == path:
                return name
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        relative = path
    except OSError:  # the working directory is gone (suite/__main__.py says so): the path as it was given
        return path
    return relative if not relative.startswith("..") else path


def detected_launcher(argv0: str | None = None, executable: str | None = None) -> str:
    """How this process was started, as a command to type from the working directory: ``pytest``, or
    ``python -m pytest`` with the very interpreter that ran (``.venv/bin/python -m pytest`` where README's quick
    start ran it without activating the environment; a bare ``pytest`` there would be another environment's)."""
    argv0, executable = argv0 if argv0 is not None else sys.argv[0], executable or sys.executable
    here = Path(argv0)
    if here.name.startswith(("pytest", "py.test")):  # the pytest script (pytest, pytest-3, py.test)
        return shlex.quote(typed_command(argv0, (here.name, "pytest")))
    # python -m pytest (argv0 is pytest's __main__.py), or pytest.main() called from a script of the user's own
    return shlex.join([typed_command(executable, ("python", "python3")), "-m", "pytest"])


def started_as(module: str, script: str, argv0: str | None = None, executable: str | None = None) -> str:
    """How one of the suite's commands was started, as a command to type from the working directory: ``python -m
    MODULE`` (argv0 is a ``__main__.py``) with the very interpreter that ran, or the console script ``script``; each
    by its bare name where the shell finds that very file by it, else by its path (``.venv/bin/triton-portability``
    started by path from a shell without the environment: a bare name there is another environment's or none)."""
    argv0, executable = argv0 if argv0 is not None else sys.argv[0], executable or sys.executable
    if Path(argv0).name == "__main__.py":
        return shlex.join([typed_command(executable, ("python", "python3")), "-m", module])
    if os.sep not in argv0:  # a bare name, as typed (the shell found it on PATH)
        return shlex.quote(argv0 or script)
    return shlex.quote(typed_command(argv0, (Path(argv0).name, script)))


def note_launcher() -> None:
    """The controller, at start-up: how the run was started, for its workers' reproduction lines (repro_prefix);
    left as it is where suite/__main__.py (triton-portability, python -m triton_portability, python -m suite) or
    the caller set it."""
    if not os.environ.get(LAUNCHER_ENV):
        os.environ[LAUNCHER_ENV] = detected_launcher()


# The checkout's root, which the suite's test ids are relative to (suite/test_kernels.py::...).
CHECKOUT_ROOT = Path(__file__).resolve().parents[2]
# Launchers that find the suite's own test file from a test id as printed, from any directory (suite/__main__.py).
ID_FINDING_LAUNCHERS = ("triton-portability", "triton_portability", "suite")


def runnable_id(nodeid: str, launcher: list[str], started_in: str | None) -> str:
    """A test id a reproduction line can run where the run started: pytest finds a test file from the directory it
    runs in, so a run started in a subdirectory of the checkout prints the file's path from there
    ('../suite/test_kernels.py::...'); triton-portability and python -m suite find it from the id as printed."""
    path, sep, rest = nodeid.partition("::")
    if (not sep or started_in is None or not path.startswith("suite/") or not (CHECKOUT_ROOT / path).is_file()
            or any(Path(word).name in ID_FINDING_LAUNCHERS for word in launcher[-1:] + launcher[:1])):
        return nodeid
    try:
        relative = os.path.relpath(CHECKOUT_ROOT / path, started_in)
    except ValueError:  # another drive
        relative = str(CHECKOUT_ROOT / path)
    return nodeid if relative == path else f"{relative}{sep}{rest}"


def repro_prefix(ctx: Any, nodeid: str, launcher: list[str] | None = None) -> list[str]:
    """The command that reruns one test alone, with every option that changes what a case does; ``--repro=CASE``
    (and ``--config`` where the case ran a config other than the default) completes it. ``launcher``: how the run
    was started, where not this run's own."""
    opts = ctx.options
    # As the run was started (note_launcher): pytest or python -m pytest (with the interpreter that ran) in a checkout;
    # triton-portability (or python -m triton_portability, python -m suite) from any directory, which finds the suite's
    # own test file from a test id as printed (suite/__main__.py).
    launcher = launcher or shlex.split(os.environ.get(LAUNCHER_ENV, "")) or ["pytest"]
    parts = [*launcher, runnable_id(nodeid, launcher, opts.started_in), f"--backend={ctx.backend.name}"]
    parts += [f"--kernel-module={m}" for m in opts.kernel_modules]
    if opts.autotune_dir is not None:
        parts.append(f"--autotune-dir={opts.autotune_dir}")
    if opts.case_timeout_given:
        parts.append(f"--case-timeout={opts.case_timeout:g}")
    if opts.known_issues.resolve() != known_mod.DEFAULT_PATH.resolve():
        parts.append(f"--known-issues={opts.known_issues}")
    if opts.no_memcheck:  # the memory checker changes how an out-of-bounds store is reported
        parts.append("--no-memcheck")
    if opts.numerics:  # the modelled GPU's arithmetic: without it the case computes as the plain interpreter does
        parts.append(f"--numerics={opts.numerics}")
    return parts


def config_args(spec: Any, config: dict[str, Any], family: str) -> list[str]:
    """``--config=JSON`` when ``config`` is not the family's default (from the autotune cache or --config)."""
    if dict(config) == spec.default_config_for(family):
        return []
    return [f"--config={json.dumps(dict(config), sort_keys=True, separators=(',', ':'))}"]
