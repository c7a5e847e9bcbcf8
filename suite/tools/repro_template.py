"""A failing case of the Triton portability suite, exported with --export-failures: rerun it without the suite.

    python repro.py                     # the kernel module as it was when the case failed (kernel/ beside this file)
    python repro.py --module my_k.py    # the same case against another copy of the module (your fixed source)
    python repro.py --interpret         # on Triton's CPU interpreter, with the suite's memory and race check

Needs torch, triton and numpy (Triton's interpreter, which this script also hooks to record launches, imports it);
on the CPU interpreter also packaging (the suite's fixes of the interpreter's gaps, which it applies as the suite
does, read Triton's version with it).
It rebuilds the exact inputs and the poisoned, guarded outputs of the failing case from case.pt, launches the
kernel's own launcher with the failing config (an autotuned kernel runs that config, as in the suite) on a GPU torch
sees (CUDA or ROCm), else on Triton's CPU interpreter, and applies the checks the suite applied to the case, with
the suite's own code for them (checks/: copies of suite/checks/tolerance.py, ties.py, launches.py, memcheck.py and
returned.py): every element written, nothing stored outside the outputs, the inputs unchanged, a @triton.jit launch
that received every output, every output within the bound of the float64 reference (the bound of the machine it runs
on: an fp32 dot's operand rounding is this machine's, read from its hardware profile as the suite reads it), and on
the interpreter every memory access and race. The spec API the kernel module imports (kernels.spec,
kernels.registry, ...) is carried in api/, a copy of the suite's kernels/ folder; nothing of the suite's test harness
runs.

Exit status (docs/checks.md, "A finding that travels"):
    0  RIGHT           every check the suite applied to this case was applied here, and passed
    1  STILL WRONG     a check failed here: the finding reproduced (or another one)
    2  CANNOT RUN HERE this machine cannot run the case (a dtype it lacks, an operation its interpreter lacks, out
                       of memory): nothing was judged
    3  NOT CONFIRMED   every check applied here passed, but one the suite applied cannot be applied here (a race or
                       an out-of-bounds read on a GPU), or the failure was intermittent: this is no proof of a fix
    4  NOT TESTED      this script's own failure: a package it needs is missing, the folder is incomplete, the module
                       does not import or registers no such kernel
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
FORMAT = 2  # meta.json's layout this script reads
RIGHT, WRONG, CANNOT_RUN, NOT_CONFIRMED, NOT_TESTED = 0, 1, 2, 3, 4
VERDICT = {RIGHT: "RIGHT", WRONG: "STILL WRONG", CANNOT_RUN: "CANNOT RUN HERE", NOT_CONFIRMED: "NOT CONFIRMED",
           NOT_TESTED: "NOT TESTED"}
# What each check is called in meta.json's "checked" (the suite's checks of the case) and in this script's output.
CHECKS = {
    "values": "values against the float64 reference under the tolerance's bound",
    "unwritten": "never-written elements (outputs start as a poison no arithmetic makes)",
    "guards": "guard regions (a store outside the outputs' elements)",
    "inputs": "inputs unchanged (but those the spec lets the kernel write)",
    "launched": "a @triton.jit launch (not a torch path of the launcher)",
    "reached": "every output received by a launch (not a copy the launcher made)",
    "memory": "out-of-bounds accesses (the suite's interpreter memory check)",
    "races": "races within a program (the suite's interpreter race check)",
    "sanitizer": "out-of-bounds accesses (the vendor's memory checker, compute-sanitizer or AMD's ASan)",
}
# Runs of the case a RIGHT needs, each right: a kernel right at its first launch in a process and wrong after (a
# cache, a warm-up) is seen; where the suite's failure was intermittent, as many as the suite reruns a wrong case.
RUNS, INTERMITTENT_RUNS = 3, 20
INT_POISON = -94  # suite/checks/harness.py's poison of integer outputs
# checks/standins/: what the carried modules use of pytest, and of suite/compat.py, where pytest or packaging is missing
PYTEST_STANDIN, COMPAT_STANDIN = "pytest_standin", "suite_compat"


class Arguments(argparse.ArgumentParser):
    """Command-line mistakes end as the script's own failure (4), not argparse's status 2 (CANNOT RUN HERE)."""

    def error(self, message: str):
        self.print_usage(sys.stderr)
        print(f"NOT TESTED: {message}\nexit status {NOT_TESTED}")
        sys.exit(NOT_TESTED)


class Verdict(Exception):  # noqa: N818 - the script's answer
    """The script ends here with ``status``, saying ``text``."""

    def __init__(self, status: int, text: str) -> None:
        super().__init__(text)
        self.status, self.text = status, text


class ProcessEnded(BaseException):  # noqa: N818 - what the module tried
    """os._exit (or posix._exit) called by the kernel module or its launcher: raised instead of ending the process
    (which would end this script with the status of the module's choosing, 0 included)."""


def need(name: str):
    """The package ``name``, or the script's own failure naming it."""
    try:
        return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any failure to import is a package missing or broken here
        raise Verdict(NOT_TESTED, f"repro.py needs {name}, which does not import here ({type(exc).__name__}: "
                                  f"{exc}); install it (repro.py needs torch, triton and numpy)") from None


def imports(*names: str) -> bool:
    """Whether every module named imports here."""
    try:
        for name in names:
            importlib.import_module(name)
    except Exception:  # noqa: BLE001 - missing, or broken: either way not there
        return False
    return True


def read_meta() -> dict:
    try:
        meta = json.loads((HERE / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        raise Verdict(NOT_TESTED, f"repro.py: {HERE / 'meta.json'} cannot be read ({exc}): the folder is "
                                  f"incomplete; export the case again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise Verdict(NOT_TESTED, f"repro.py: {HERE / 'meta.json'} is not of the layout this script reads (format "
                                  f"{FORMAT}): export the case again with this suite")
    for part in ("case.pt", "api/kernels", "api/hardware_profiles", "checks/suite/checks"):
        if not (HERE / part).exists():
            raise Verdict(NOT_TESTED, f"repro.py: {HERE / part} is missing: the folder is incomplete; export the "
                                      f"case again")
    return meta


def choose_device(interpret: bool) -> str:
    """'cuda' (a GPU torch sees, CUDA or ROCm) or 'cpu' (Triton's CPU interpreter), before triton is imported."""
    torch = need("torch")
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        interpret = True
    if not interpret and torch.cuda.is_available():
        return "cuda"
    os.environ["TRITON_INTERPRET"] = "1"  # before the first @triton.jit: the kernel runs on Triton's CPU interpreter
    return "cpu"


def machine(device: str):
    """This machine's hardware profile, read as the suite reads it (api/hardware_profiles), and its name."""
    import torch

    import hardware_profiles

    if device == "cpu":
        return hardware_profiles.interpreter_profile(), "Triton CPU interpreter"
    props = torch.cuda.get_device_properties(0)
    if torch.version.hip:
        arch, warp = props.gcnArchName.split(":")[0], getattr(props, "warp_size", 64)
    else:
        arch, warp = f"sm_{props.major}{props.minor}", getattr(props, "warp_size", 32)
    try:
        profile, _ = hardware_profiles.detect(arch, props.name, props.multi_processor_count, warp,
                                              getattr(props, "shared_memory_per_block_optin", None))
    except ValueError as exc:
        raise Verdict(CANNOT_RUN, f"this GPU ({props.name}, {arch}) has no hardware profile the suite could read "
                                  f"its dtypes and fp32 dot precision from: {exc}") from None
    return profile, f"{props.name}, {arch}, hardware profile {profile.key}"


def carried_checks(device: str) -> types.SimpleNamespace:
    """The suite's own check modules, as carried in checks/ (with stand-ins for the suite's session state); on the
    interpreter, the suite's fill-ins of its gaps (the kernel runs as the suite ran it) and its memory and race check,
    installed in the order the suite installs them."""
    sys.path.insert(0, str(HERE / "checks"))
    if not imports("pytest"):  # compat.py and memcheck.py use pytest for a usage error alone
        sys.modules["pytest"] = importlib.import_module(PYTEST_STANDIN)
    if not imports("packaging.specifiers", "packaging.version"):  # suite/compat.py reads Triton's version with it
        if device == "cpu":
            raise Verdict(NOT_TESTED, "repro.py needs packaging on Triton's CPU interpreter (the suite's fixes of the "
                                      "interpreter read Triton's version with it): install it")
        import suite

        suite.compat = sys.modules["suite.compat"] = importlib.import_module(COMPAT_STANDIN)
    from suite.checks import launches, memcheck, returned, ties, tolerance

    found = types.SimpleNamespace(tolerance=tolerance, ties=ties, launches=launches, memcheck=memcheck,
                                  returned=returned, interpreter=None, checker=None, cannot=[])
    if device == "cpu":
        from suite.checks import interpreter

        try:
            interpreter.install()
        except Exception as exc:  # noqa: BLE001 - a Triton whose interpreter moved what the fixes patch
            raise Verdict(CANNOT_RUN, f"this Triton's CPU interpreter cannot be given the suite's fixes of its gaps "
                                      f"({type(exc).__name__}: {exc}): the case cannot run here as the suite ran "
                                      f"it") from None
        found.interpreter = interpreter
    try:
        launches.install()
    except Exception as exc:  # noqa: BLE001 - a Triton that moved what the hooks patch
        found.launches = None
        found.cannot.append(("launched", f"this Triton's launches cannot be recorded ({type(exc).__name__}: {exc})"))
    if device == "cpu":
        os.environ[memcheck.RACE_ENV] = "1"  # the race check on, whatever this shell says
        try:
            found.checker = memcheck.install()
        except Exception as exc:  # noqa: BLE001 - a Triton that moved what the hooks patch
            found.cannot.append(("memory", f"this Triton's interpreter cannot be hooked ({type(exc).__name__}: "
                                           f"{exc})"))
    return found


def guard_exits() -> None:
    """os._exit (and posix._exit) raise instead of ending the process, for the rest of it: a kernel module, its
    launcher or a thread of theirs cannot end this script with a status of their choosing."""
    def refuse(status: object = 0) -> None:
        raise ProcessEnded(f"os._exit({status!r}) was called")

    os._exit = refuse
    if "posix" in sys.modules:
        sys.modules["posix"]._exit = refuse


def snapshot(modules) -> dict:
    """What the checks depend on, by identity: the carried check modules' names and their classes' attributes,
    this script's, torch.Tensor's methods (its base class's too), the Triton classes the checks hook, and torch's,
    math's and the builtins' existing names; compared after the module's import and after each launch. A name added
    to a module or class the checks read may shadow another (a class's inherited method, a module's builtin): where
    the names are watched as a whole, an added one counts as a change."""
    import builtins
    import math

    import torch

    whole = [(m.__name__, m) for m in (*modules, sys.modules[__name__])]
    whole += [("torch.Tensor", torch.Tensor), ("torch._C.TensorBase", torch.Tensor.__mro__[1])]
    for module in modules:
        whole += [(f"{module.__name__}.{k}", v) for k, v in vars(module).items()
                  if isinstance(v, type) and v.__module__ == module.__name__]
    for path in ("triton.runtime.interpreter.InterpreterBuilder", "triton.runtime.interpreter.GridExecutor",
                 "triton.runtime.interpreter.InterpretedFunction", "triton.runtime.interpreter.ReduceScanOpInterface",
                 "triton.runtime.jit.JITFunction", "triton.runtime.autotuner.Autotuner",
                 "triton.runtime.autotuner.Heuristics"):
        module, _, name = path.rpartition(".")
        if module in sys.modules and hasattr(sys.modules[module], name):
            whole.append((path, getattr(sys.modules[module], name)))
    taken = {}
    for label, space in whole:
        taken[(label, None)] = frozenset(vars(space))
        for key, value in list(vars(space).items()):
            taken[(label, key)] = id(value)
    for module in (torch, math, builtins):
        for key, value in list(vars(module).items()):
            taken[(module.__name__, key)] = id(value)
    return taken


def tampered(before: dict, modules) -> list[str]:
    now = snapshot(modules)
    changed = []
    for (label, key), value in before.items():
        if key is None:
            changed += [f"{label}.{k} (added)" for k in sorted(now.get((label, None), frozenset()) - value)]
        elif now.get((label, key)) != value:
            changed.append(f"{label}.{key}")
    return sorted(changed)


def import_module(meta: dict, override: str | None):
    """The kernel module (kernel/'s copy, or ``override``) under the name it had in the suite; the folders of the
    module and of the copy go last on sys.path, as the suite put a --kernel-module's folder, so helpers beside it
    import."""
    name = meta["module"]["name"]
    path = Path(override).resolve() if override else HERE / meta["module"]["copy"]
    if not path.is_file():
        raise Verdict(NOT_TESTED, f"repro.py: {'--module=' + override if override else path}: no such file")
    for folder in (path.parent, HERE / "kernel"):
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
    found = importlib.util.spec_from_file_location(name, path)
    if found is None or found.loader is None:
        raise Verdict(NOT_TESTED, f"repro.py: {path} cannot be imported (not a Python source file?)")
    module = importlib.util.module_from_spec(found)
    sys.modules[name] = module
    try:
        found.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the module's own failure at import: nothing was tested
        if type(exc).__name__ == "Skipped":  # pytest.skip at import: the module's own word that it cannot run here
            raise Verdict(CANNOT_RUN, f"the kernel module skips itself here: {exc}") from None
        raise Verdict(NOT_TESTED, f"the kernel module {path} does not import here: {type(exc).__name__}: "
                                  f"{exc}") from None
    from kernels import registry

    try:
        registry.get(meta["kernel"])
    except KeyError:
        raise Verdict(NOT_TESTED, f"the kernel module {path} registered no kernel named {meta['kernel']!r}: give "
                                  f"--module the module that registers it") from None
    return registry.get(meta["kernel"])


def dtype_of(name: str):
    import torch

    return getattr(torch, name.removeprefix("torch."))


def view(raw, item: dict):
    """The tensor ``item`` describes, as a view of its storage's bytes ``raw``."""
    import torch

    return torch.as_strided(raw.view(dtype_of(item["dtype"])), item["size"], item["stride"], item["offset"])


def rebuild(saved: dict, device: str) -> tuple[dict, dict]:
    """The tensors as they were before the launch: each storage's bytes moved to ``device`` once, each tensor its
    view of them; and the storages' bytes."""
    raw = {key: data.to(device, copy=True) for key, data in saved["storages"].items()}
    out = {}
    for name, item in saved["values"].items():
        out[name] = view(raw[item["view_of"]], item) if isinstance(item, dict) and item.get("view_of") else item
    return out, raw


def as_built(saved: dict, name: str):
    """Tensor ``name`` as it was before the launch (on the CPU)."""
    item = saved["values"][name]
    return view(saved["storages"][item["view_of"]], item)


def same_bits(a, b):
    """Elementwise: the same bit pattern (a NaN equals itself)."""
    import torch

    if a.dtype == torch.bool:
        return a.view(torch.uint8) == b.view(torch.uint8)
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(a.element_size())
    if view is None:
        return (a == b) | (torch.isnan(a) & torch.isnan(b))
    return a.view(view) == b.view(view)


def first_at(mask) -> tuple:
    return tuple(int(i) for i in mask.nonzero()[0])


class Case:
    """One run of the case: the launch, then every check that can be applied here."""

    def __init__(self, meta: dict, saved: dict, spec, device: str, checks: types.SimpleNamespace, profile) -> None:
        self.meta, self.saved, self.spec, self.device, self.checks = meta, saved, spec, device, checks
        self.profile = profile
        self.applied: set[str] = set()

    def launch(self, fill: int | None = None) -> tuple[dict, dict, dict, object, object]:
        """(inputs, outputs, storages after, the launch record, what run returned), from case.pt's state; ``fill``:
        each poisoned output filled with it first (the suite's second look at an element that may be unwritten)."""
        import torch

        meta, launches = self.meta, self.checks.launches
        values, raw = rebuild(self.saved, self.device)
        inputs = {k: values[k] for k in meta["inputs"]}
        outputs = {k: values[k] for k in meta["outputs_passed"]}
        if fill is not None:
            for name, poisoned in meta["poisoned"].items():
                if poisoned:
                    outputs[name].fill_(fill)
        record = launches.recording() if launches else _NoRecord()
        chosen = launches.chosen(meta["config"]) if launches else _NoRecord()
        with record as seen, chosen:
            try:
                value = self.spec.run(inputs, outputs, dict(meta["config"]))
                if self.device == "cuda":
                    torch.cuda.synchronize()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # noqa: BLE001 - whatever the launch raised is classified here
                raise self.launch_failed(exc) from None
        return inputs, outputs, raw, seen, value

    def launch_failed(self, exc: BaseException) -> Verdict:
        import torch

        text = f"{type(exc).__name__}: {exc}".strip()[:2000]
        if (violation := self.checks.memcheck.violation_in(exc)) is not None:
            return Verdict(WRONG, str(violation))
        if self.checks.interpreter is not None and (gap := self.checks.interpreter.gap_in(exc)) is not None:
            return Verdict(CANNOT_RUN, f"Triton's CPU interpreter cannot run this kernel as a GPU would: {gap}")
        if isinstance(exc, torch.OutOfMemoryError) or "out of memory" in text.lower():
            return Verdict(CANNOT_RUN, f"out of memory here: {text}")
        if type(exc).__name__ == "Skipped":  # the spec's own pytest.skip: it says why it cannot run here
            return Verdict(CANNOT_RUN, f"the launcher skips the case here: {exc}")
        if self.checks.launches and isinstance(exc, self.checks.launches.NotAnAutotuneConfig):
            return Verdict(NOT_TESTED, f"the failing config cannot be run: {exc}")
        if isinstance(exc, (SystemExit, ProcessEnded)):
            return Verdict(WRONG, f"the launcher tried to end the process ({text or 'sys.exit()'})")
        return Verdict(WRONG, f"the launch raised {text}")

    def judge(self) -> list[str]:
        """Launch once and apply every check that can be applied here: the problems found (none: right)."""
        meta, checks = self.meta, self.checks
        inputs, outputs, raw, seen, value = self.launch()
        if checks.checker is not None:
            self.applied.add("memory")
            if checks.checker.races is not None:
                self.applied.add("races")
        problems = []
        if meta["returns_outputs"]:
            outputs, problem = checks.returned.collect(types.SimpleNamespace(outputs=meta["outputs"]), value)
            if problem:
                return [problem]
        if checks.launches:
            self.applied.add("launched")
            if meta["launch_required"] and not seen.kernels and any(t.numel() for t in outputs.values()):
                problems.append("the run launched no @triton.jit function: the launcher computed the outputs another "
                                "way, so the kernel was never tested")
            elif not meta["returns_outputs"] and seen.kernels:
                self.applied.add("reached")
                if missed := [n for n in meta["outputs"] if outputs[n].numel() and not seen.reached(outputs[n])]:
                    problems.append(f"output(s) {missed} reached no kernel launch: the launcher copied a result of "
                                    f"its own into them, so what the kernel wrote cannot be seen")
        problems += self.stores_outside(raw)
        problems += self.inputs_changed(raw)
        for name in meta["outputs"]:
            out = outputs[name]
            never = self.never_written(name, out)
            if never is not None:
                problems.append(never)
                continue
            self.applied.add("values")
            if problem := self.compare(name, out):
                problems.append(problem)
        return problems

    def stores_outside(self, raw: dict) -> list[str]:
        """Elements of an output's storage outside its view (the guard regions around it) that changed."""
        import torch

        meta, saved = self.meta, self.saved
        problems = []
        for key in dict.fromkeys(saved["values"][n]["view_of"] for n in meta["outputs_passed"]):
            names = [n for n in meta["outputs_passed"] if saved["values"][n]["view_of"] == key]
            dtype = dtype_of(saved["values"][names[0]]["dtype"])
            now, was = raw[key].detach().cpu().view(dtype), saved["storages"][key].view(dtype)
            outside = torch.ones(was.numel(), dtype=torch.bool)
            for name in names:
                item = saved["values"][name]
                torch.as_strided(outside, item["size"], item["stride"], item["offset"]).fill_(False)
            self.applied.add("guards")
            changed = outside & ~same_bits(now, was)
            if changed.any():
                problems.append(f"{'/'.join(names)}: {int(changed.sum())} element(s) written outside the output (first "
                                f"at element {int(changed.nonzero()[0])} of its buffer, whose view starts at element "
                                f"{saved['values'][names[0]]['offset']}): an out-of-bounds store")
        return problems

    def inputs_changed(self, raw: dict) -> list[str]:
        """Inputs the launch changed (their elements, or bytes of their storage outside them), but those the spec
        lets the kernel write (mutable_inputs)."""
        meta, saved = self.meta, self.saved
        self.applied.add("inputs")
        mutable = set(meta["mutable_inputs"])
        outputs_on = {saved["values"][n]["view_of"] for n in meta["outputs_passed"]}
        problems = []
        by_storage: dict[str, list[str]] = {}
        for name in meta["inputs"]:
            item = saved["values"][name]
            if isinstance(item, dict) and item.get("view_of") is not None:
                by_storage.setdefault(item["view_of"], []).append(name)
        for key, names in by_storage.items():
            now, was = raw[key].detach().cpu(), saved["storages"][key]
            if bool((now == was).all()):
                continue
            found = False
            for name in names:
                if name in mutable:
                    continue
                item = saved["values"][name]
                differ = ~same_bits(view(now, item), view(was, item))
                if differ.any():
                    found = True
                    problems.append(f"the kernel changed its input {name!r}: {int(differ.sum())} of {differ.numel()} "
                                    f"elements changed (first at {first_at(differ)})")
            if not found and not mutable & set(names) and key not in outputs_on:
                problems.append(f"the kernel changed its input(s) {names}: memory of their storage outside their "
                                f"elements (a layout's padding)")
        return problems

    def never_written(self, name: str, out) -> str | None:
        """The suite's rule for elements still holding the poison (suite/checks/harness.py, _never_written)."""
        import torch

        meta, saved = self.meta, self.saved
        if not meta["poisoned"].get(name):
            return None
        self.applied.add("unwritten")
        poison, initial = saved["poison"][name], as_built(saved, name)
        mask = poison & same_bits(out.detach().cpu(), initial)
        ref = saved["reference"][name].to(torch.float64)
        if not out.dtype.is_floating_point and out.dtype != torch.bool and mask.any():
            # An integer equal to the poison is written where the reference expects that very value; elsewhere it is
            # unwritten only if it holds a second poison when the outputs start as that one.
            held = int(torch.tensor(INT_POISON).to(out.dtype))
            mask = mask & (ref != held)
            if mask.any():
                again = self.launch(fill=INT_POISON + 1)[1][name].detach().cpu()
                mask = mask & (again == int(torch.tensor(INT_POISON + 1).to(out.dtype)))
        elif out.dtype.is_floating_point and not meta["distinct_poison"].get(name, True):
            # An fp8 format with no NaN of its own to poison with: a NaN where the reference is NaN is unwritten only
            # if it is still 0 when the outputs start as 0.
            ambiguous = mask & torch.isnan(ref)
            if ambiguous.any():
                again = self.launch(fill=0)[1][name].detach().cpu()
                mask = (mask & ~ambiguous) | (ambiguous & (again.to(torch.float64) == 0))
        if not mask.any():
            return None
        return (f"{name}: {int(mask.sum())} of {out.numel()} elements never written (they still hold the poison; "
                f"first at {first_at(mask)})")

    def operand_u(self, name: str) -> float:
        rule = self.meta["rules"][name]
        if rule["uses_dot"] and self.meta["dtype"] == "fp32":
            return self.checks.tolerance.DOT_OPERAND_ROUNDOFF.get(self.profile.fp32_dot_precision, 0.0)
        return 0.0

    def compare(self, name: str, out) -> str | None:
        """The suite's comparison of one output (suite/checks/tolerance.py, check_output; ties.py for indices)."""
        meta, saved, checks = self.meta, self.saved, self.checks
        ref = saved["reference"][name]
        if name in meta["index_outputs"]:
            rule = types.SimpleNamespace(**meta["index_outputs"][name])
            built = {k: as_built(saved, k) if isinstance(saved["values"][k], dict) else saved["values"][k]
                     for k in meta["inputs"]}
            check = checks.ties.check_indices(name, rule, built, out.detach().cpu(), ref)
            return None if check.passed else check.detail
        rule = meta["rules"][name]
        tolerance = types.SimpleNamespace(output_dtype=rule["output_dtype"])
        held = types.SimpleNamespace(make_outputs=None if meta["returns_outputs"] else True)
        judged_as, why = checks.returned.judged_dtype(held, meta["dtype"], out, tolerance)
        check = checks.tolerance.check_output(
            name, out.detach(), ref.to(out.device), saved["magnitude"].get(name), reduction_length=rule["reduction_length"],
            safety=rule["safety"], operand_u=self.operand_u(name), accumulator=rule["accumulator"],
            judged_as=judged_as, judged_why=why, keep_subnormals=rule["keep_subnormals"])
        return None if check.passed else check.detail


class _NoRecord:
    """Where this Triton's launches cannot be recorded: no record, no config chosen."""

    kernels: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def cannot_check_here(meta: dict, checks: types.SimpleNamespace, device: str) -> dict[str, str]:
    """The suite's checks of this case that cannot be applied here, and why."""
    cannot = dict(checks.cannot)
    if "launched" in cannot:
        cannot["reached"] = cannot["launched"]
    if device == "cuda":
        cannot["memory"] = cannot["races"] = ("the suite's check runs on Triton's CPU interpreter: rerun with "
                                              "--interpret")
    elif "memory" in cannot:
        cannot["races"] = cannot["memory"]
    if device == "cuda" or "memory" in cannot:
        cannot["sanitizer"] = ("this script cannot read the vendor's checker: rerun with --interpret (the suite's "
                               "interpreter check), or under `compute-sanitizer --tool memcheck` and read its report")
    return {k: v for k, v in cannot.items() if k in meta["checked"]}


def main(argv: list[str] | None = None) -> int:
    try:
        status, text = run(argv)
    except Verdict as verdict:
        status, text = verdict.status, verdict.text
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - this script's own failure is never a reproduced one (1)
        import traceback

        traceback.print_exc()
        status, text = NOT_TESTED, f"repro.py failed ({type(exc).__name__}: {exc}): nothing was judged"
    print(f"{VERDICT[status]}: {text}")
    print(f"exit status {status} ({VERDICT[status]}; the statuses are in repro.py's docstring)")
    sys.stdout.flush()
    return status


def run(argv: list[str] | None) -> tuple[int, str]:
    parser = Arguments(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", help="the kernel module to test (default: the copy in kernel/)")
    parser.add_argument("--interpret", action="store_true",
                        help="run on Triton's CPU interpreter, with the suite's memory and race check")
    parser.add_argument("--runs", type=int, default=None,
                        help=f"how many times the case runs, each right for RIGHT (default {RUNS}; "
                             f"{INTERMITTENT_RUNS} where the failure was intermittent)")
    args = parser.parse_args(argv)
    if args.runs is not None and args.runs < 1:
        raise Verdict(NOT_TESTED, f"--runs={args.runs}: the case must run at least once")
    meta = read_meta()
    device = choose_device(args.interpret)
    need("numpy")
    triton = need("triton")
    import torch

    sys.path.insert(0, str(HERE / "api"))
    sys.path.append(str(HERE / "checks" / "standins"))
    profile, where = machine(device)
    tool = meta["toolchain"]
    print(f"{meta['case']}  config {json.dumps(meta['config'], sort_keys=True)}")
    print(f"failed in the suite on {tool['backend']} ({tool['device']}), triton {tool['triton']}, torch {tool['torch']}"
          f": {meta['message'].splitlines()[0]}")
    print(f"rerun here on {'the GPU' if device == 'cuda' else 'the CPU interpreter'} ({where}), triton "
          f"{triton.__version__}, torch {torch.__version__}; numerics flags then: {tool['flags'] or 'none'}")
    if not profile.supports(meta["dtype"]):
        raise Verdict(CANNOT_RUN, f"cannot run here: this machine ({where}) has no {meta['dtype']} "
                                  f"(its dtypes: {', '.join(profile.dtypes)})")
    checks = carried_checks(device)
    try:
        saved = torch.load(HERE / "case.pt", map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - a case.pt this torch cannot read
        raise Verdict(NOT_TESTED, f"repro.py: {HERE / 'case.pt'} cannot be read here ({type(exc).__name__}: "
                                  f"{exc})") from None
    guard_exits()
    modules = [checks.tolerance, checks.ties, checks.memcheck, checks.returned] + (
        [checks.launches] if checks.launches else [])
    before = snapshot(modules)
    spec = import_module(meta, args.module)
    if changed := tampered(before, modules):
        return WRONG, f"the kernel module changed what this script checks with: {', '.join(changed[:8])}"
    for name, rule in meta["rules"].items():
        case = Case(meta, saved, spec, device, checks, profile)
        here = case.operand_u(name)
        print(f"bound of {name} ({rule['dtype']}): safety {rule['safety']:g} x ((operand_u {here:.3g} + sqrt(K "
              f"{rule['reduction_length']}) x u_acc of {rule['accumulator']}) x |magnitude| + u_out {rule['u_out']:.3g} "
              f"x |reference|) + tiny"
              + (f"; operand_u is this machine's: fp32 dot precision {profile.fp32_dot_precision} ({where}; the suite's "
                 f"run: {meta['fp32_dot_precision']} on {tool['backend']})" if rule["uses_dot"] and meta["dtype"] ==
                 "fp32" else ""))
    intermittent = bool(meta.get("intermittent")) or meta["export_rerun"]["reproduced"] is False
    runs = args.runs or (INTERMITTENT_RUNS if intermittent else RUNS)
    case = Case(meta, saved, spec, device, checks, profile)
    wrong_runs: list[list[str]] = []
    for _ in range(runs):
        try:
            problems = case.judge()
        except Verdict as verdict:
            if verdict.status != WRONG:
                raise
            problems = [verdict.text]
        if changed := tampered(before, modules):
            problems.append(f"the kernel module changed what this script checks with: {', '.join(changed[:8])}")
        if problems:
            wrong_runs.append(problems)
            break
    if meta.get("memory"):
        print(f"the suite's finding: {meta['memory']}")
    cannot = cannot_check_here(meta, checks, device)
    applied = [CHECKS[c] for c in CHECKS if c in case.applied or c == "sanitizer" and "memory" in case.applied and
               c in meta["checked"]]
    print("checked here: " + "; ".join(applied))
    for name, why in cannot.items():
        print(f"cannot check here: {CHECKS[name]}: {why}")
    if wrong_runs:
        return WRONG, "\n  " + "\n  ".join(wrong_runs[0])
    if meta["finding"] in cannot:
        return NOT_CONFIRMED, (f"every check applied here passed, but the suite's finding was one of "
                               f"{CHECKS[meta['finding']]}, which cannot be checked here (above)")
    if missing := sorted(set(meta["checked"]) & set(cannot)):
        return NOT_CONFIRMED, (f"every check applied here passed, but the suite also checked what cannot be checked "
                               f"here: {'; '.join(CHECKS[m] for m in missing)}")
    if intermittent:
        why = ("the suite found it intermittent" if meta.get("intermittent") else
               "it did not happen again when the export ran the case once more")
        return NOT_CONFIRMED, (f"right in {runs} run(s) here, but the suite's failure was intermittent ({why}): no "
                               f"number of right runs proves a fix")
    return RIGHT, (f"every check the suite applied to this case passed here ({runs} run(s)). This is one case under "
                   f"one config; the suite's test draws more of both: rerun it with "
                   f"{meta['suite_repro_line'] or 'the suite'}")


if __name__ == "__main__":
    sys.exit(main())
