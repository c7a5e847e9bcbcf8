"""Registers, spills and shared memory of a kernel as the GPU loaded it, for checking the compile matrix's offline
figures. ``loaded(spec, dtype, shape, config, backend)`` runs one case with the kernel's JIT cache swapped for an
empty one, so the variants it returns are exactly those this launch compiled (or loaded from Triton's on-disk cache),
whatever the process ran before; the process's own cache is put back after.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def loaded(spec: Any, dtype: str, shape: dict, config: dict, backend: Any) -> dict[str, Any]:
    import torch

    from kernels.spec import Case
    from suite import compat
    from suite.checks.harness import run_case

    compat.require("loaded-registers-cache")  # a Triton that moved what this swaps: a usage error naming the patch
    jit = spec.jit_fn
    own = jit.device_caches
    jit.device_caches = defaultdict(jit.create_binder)
    try:
        layout = spec.layouts[0] if spec.layouts else "contiguous"
        result = run_case(spec, Case(spec.name, dtype, shape, layout=layout, seed=0), backend, config)
        cache = jit.device_caches[torch.cuda.current_device()][0]
        variants = []
        for compiled in cache.values():
            compiled._init_handles()
            variants.append({"n_regs": compiled.n_regs, "n_spills": compiled.n_spills,
                             "shared": compiled.metadata.shared})
    finally:
        jit.device_caches = own
    return {"kernel": spec.name, "passed": result.passed, "message": None if result.passed else result.message(),
            "variants": variants}
