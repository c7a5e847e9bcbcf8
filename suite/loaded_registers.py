"""Registers, spills and shared memory of a kernel as the GPU loaded it, for checking the
compile matrix's offline figures: ``python -m suite.loaded_registers KERNEL DTYPE SHAPE CONFIG``.

Runs in a fresh process so that the kernel's JIT cache holds exactly the variant this
launch compiled. Prints one JSON object.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    kernel, dtype, shape, config = argv[0], argv[1], json.loads(argv[2]), json.loads(argv[3])
    from suite.backend import resolve

    backend = resolve("cuda")
    from kernels import registry
    from kernels.spec import Case
    from suite.harness import run_case

    registry.load_builtin()
    spec = registry.get(kernel)
    result = run_case(spec, Case(kernel, dtype, shape, seed=0), backend, config)
    import torch

    cache = spec.jit_fn.device_caches[torch.cuda.current_device()][0]
    loaded = []
    for compiled in cache.values():
        compiled._init_handles()
        loaded.append({"n_regs": compiled.n_regs, "n_spills": compiled.n_spills, "shared": compiled.metadata.shared})
    print(json.dumps({"kernel": kernel, "passed": result.passed, "variants": loaded}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
