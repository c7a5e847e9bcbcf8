"""What the race check (suite/checks/memcheck.py, Races) costs on the interpreter: every built-in kernel's largest
interpreter case (each dim at its interpret_max), launched through its spec's run with the memory checker on, the race
check on and off in turn, in rounds (after one untimed warm-up launch each); CPU time of this process (time.process_time), so that other load on a shared
machine counts less than wall time would; and, measured directly, the CPU time spent inside the race bookkeeping
(Races.access, timed with time.process_time around each call), the share no load on the machine blurs. Run from the repository root:

    TRITON_INTERPRET=1 .venv/bin/python evidence/races/cost.py [ROUNDS] [KERNEL ...]
"""

from __future__ import annotations

import sys
import time

from kernels import registry
from kernels.spec import Case
from suite.checks import harness, interpreter, memcheck


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    wanted = set(sys.argv[2:])
    registry.load_builtin()
    interpreter.install()
    checker = memcheck.install()
    races = checker.races
    inside = [0.0]  # CPU time inside the race bookkeeping itself, measured directly: the noise-free share
    access = races.access

    def timed_access(*args, **kwargs):
        start = time.process_time()
        try:
            return access(*args, **kwargs)
        finally:
            inside[0] += time.process_time() - start

    races.access = timed_access
    jobs = []
    for spec in registry.all_specs():
        if wanted and spec.name not in wanted:
            continue
        dtype = next((d for d in spec.dtypes if not d.startswith("fp8") and d != "bf16"), None)
        if dtype is None:
            continue  # fp8 only: not on the interpreter
        shape = {d.name: (max(d.choices) if d.choices else d.interpret_max) for d in spec.dims}
        case = Case(kernel=spec.name, dtype=dtype, shape=shape, layout=spec.layouts[0], values="normal", seed=0)
        try:
            spec.check_case(case)
        except ValueError as exc:
            print(f"skip {spec.name}: {exc}")
            continue
        inputs = spec.make_inputs(case, "cpu")
        config = spec.default_config_for("interpret")
        jobs.append((spec, case, inputs, config))
    for spec, case, inputs, config in jobs:  # warm-up, untimed: the interpreter rewrites each function once
        harness.launch(spec, inputs, harness.prepare_outputs(spec, inputs, case)[0], config)
    totals = {"off": 0.0, "on": 0.0}
    per_kernel: dict[str, dict[str, float]] = {}
    for r in range(rounds):
        for mode in (("off", "on") if r % 2 == 0 else ("on", "off")):
            checker.races = races if mode == "on" else None
            for spec, case, inputs, config in jobs:
                outputs, _ = harness.prepare_outputs(spec, inputs, case)
                start = time.process_time()
                with memcheck.scope(spec.name):
                    harness.launch(spec, inputs, outputs, config)
                spent = time.process_time() - start
                totals[mode] += spent
                per_kernel.setdefault(spec.name, {"off": 0.0, "on": 0.0})[mode] += spent
    for name, t in sorted(per_kernel.items(), key=lambda kv: -kv[1]["off"]):
        print(f"{name:22s} off {t['off']:7.3f} s  on {t['on']:7.3f} s  {100 * (t['on'] / t['off'] - 1):+6.1f}%")
    print(f"{'all':22s} off {totals['off']:7.3f} s  on {totals['on']:7.3f} s  "
          f"{100 * (totals['on'] / totals['off'] - 1):+6.1f}%  ({rounds} rounds, {len(jobs)} kernels)")
    print(f"inside the race bookkeeping: {inside[0]:.3f} s of the {totals['on']:.3f} s launched with it on "
          f"({100 * inside[0] / totals['on']:.1f}%)")


if __name__ == "__main__":
    main()
