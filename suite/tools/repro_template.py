"""A failing case of the Triton portability suite, exported with --export-failures: rerun it without the suite.

    python repro.py                     # the kernel module as it was when the case failed (kernel/ beside this file)
    python repro.py --module my_k.py    # the same case against another copy of the module (your fixed source)

Needs torch and triton only (and numpy, which torch brings). It rebuilds the exact inputs and the poisoned outputs of
the failing case from case.pt, launches the kernel's own launcher with the failing config on whatever it finds (a GPU
torch can see, CUDA or ROCm; else Triton's CPU interpreter), and compares every output with the float64 reference
under the bound the suite used (both saved per element in case.pt; the rule is in meta.json). Exit status: 1 while
the kernel is still wrong (printing the worst element, its error and its bound), 0 once it is right, 2 when the case
cannot be run here, 3 when values and stores are right but the finding was an out-of-bounds read (which only the
vendor's memory checker shows). The spec API the kernel module imports (kernels.spec, kernels.registry, ...) is carried in api/,
a copy of the suite's kernels/ folder: nothing of the suite's test harness runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _backend() -> str:
    import torch

    if torch.cuda.is_available():  # CUDA or ROCm (torch calls both "cuda")
        return "cuda"
    os.environ["TRITON_INTERPRET"] = "1"  # before the first @triton.jit: the kernel runs on Triton's CPU interpreter
    return "cpu"


def _spec_api() -> None:
    """The spec API under the names kernel modules import it by: kernels.* (api/kernels) and triton_portability."""
    sys.path.insert(0, str(HERE / "api"))
    import kernels.spec as spec

    shim = types.ModuleType("triton_portability")
    shim.__dict__.update({k: v for k, v in vars(spec).items() if not k.startswith("_")})
    import kernels.inputs
    import kernels.paths
    import kernels.registry

    shim.register, shim.inputs, shim.paths = kernels.registry.register, kernels.inputs, kernels.paths
    sys.modules.setdefault("triton_portability", shim)


def _import_module(meta: dict, override: str | None):
    name = meta["module"]["name"]
    path = Path(override).resolve() if override else HERE / meta["module"]["copy"]
    if not path.is_file():
        sys.exit(f"repro.py: --module={override}: no such file" if override else f"repro.py: {path}: missing")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _kernel_spec(meta: dict):
    from kernels import registry

    try:
        return registry.get(meta["kernel"])
    except Exception:  # noqa: BLE001 - whatever the registry raises for a name it lacks
        sys.exit(f"repro.py: the module registered no kernel named {meta['kernel']!r}")


def _pin_autotuned(module, config: dict) -> None:
    """Every @triton.autotune kernel of the module runs the failing config (its meta-parameters and launch options)
    instead of timing its configs, as the suite ran it."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    for value in list(vars(module).values()):
        if isinstance(value, Autotuner):
            def matches(c, config=config) -> bool:
                have = {**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages}
                return all(have[k] == v for k, v in config.items() if k in have)

            chosen = [c for c in value.configs if matches(c)]
            if chosen:
                value.configs = chosen[:1]


def _rebuild(saved: dict, device: str) -> tuple[dict, dict]:
    """The tensors as they were before the launch: each storage moved to ``device`` once, each tensor its view;
    and the storages."""
    import torch

    bases = {key: base.to(device, copy=True) for key, base in saved["storages"].items()}
    out = {}
    for name, item in saved["values"].items():
        if isinstance(item, dict) and item.get("view_of") is not None:
            out[name] = torch.as_strided(bases[item["view_of"]], item["size"], item["stride"], item["offset"])
        else:
            out[name] = item
    return out, bases


def _outside_views(saved: dict, names, device: str) -> dict:
    """Per storage of an output: where it holds no element of its view (the guard regions around it)."""
    import torch

    masks = {}
    for name in names:
        item = saved["values"][name]
        key = item["view_of"]
        mask = masks.setdefault(key, torch.ones(saved["storages"][key].numel(), dtype=torch.bool, device=device))
        torch.as_strided(mask, item["size"], item["stride"], item["offset"]).fill_(False)
    return masks


def _same_bits(a, b):
    import torch

    if a.dtype.is_floating_point:
        view = {2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.uint8}[a.element_size()]
        return a.view(view) == b.view(view)
    return a == b


def _index(flat: int, shape) -> tuple:
    at = []
    for size in reversed(list(shape)):
        at.append(flat % max(size, 1))
        flat //= max(size, 1)
    return tuple(reversed(at))


def _compare(name: str, out, expected, bnd) -> str | None:
    import torch

    o, e, b = out.detach().to("cpu", torch.float64), expected.to(torch.float64), bnd.to(torch.float64)
    nan_e, nan_o = torch.isnan(e), torch.isnan(o)
    problems = []
    if (bad := nan_o & ~nan_e).any():
        first = _index(int(bad.flatten().nonzero()[0]), o.shape)
        problems.append(f"{int(bad.sum())} NaN where the reference is not (first at {first})")
    if (miss := nan_e & ~nan_o).any():
        problems.append(f"{int(miss.sum())} non-NaN where the reference is NaN (first at "
                        f"{_index(int(miss.flatten().nonzero()[0]), o.shape)})")
    finite = torch.isfinite(e) & torch.isfinite(o)
    inf = (torch.isinf(e) | torch.isinf(o)) & ~nan_e & ~nan_o & (o != e)
    if inf.any():
        problems.append(f"{int(inf.sum())} infinities differ")
    if finite.any():
        err = (o - e).abs()
        ratio = torch.where(finite, err / b, torch.zeros_like(err))
        top = float(ratio.max())
        if top > 1.0:
            at = int((ratio.flatten() == top).nonzero()[0])
            idx = _index(at, o.shape)
            problems.append(f"error {float(err.flatten()[at]):.3e} at {idx} is {top:.3g}x the bound "
                            f"{float(b.flatten()[at]):.3e} (got {float(o.flatten()[at])!r}, reference "
                            f"{float(e.flatten()[at])!r}); {int((ratio > 1).sum())} of {o.numel()} elements over")
    return f"{name}: " + "; ".join(problems) if problems else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", help="the kernel module to test (default: the copy in kernel/)")
    args = parser.parse_args(argv)
    meta = json.loads((HERE / "meta.json").read_text())
    device = _backend()
    import torch

    _spec_api()
    module = _import_module(meta, args.module)
    spec = _kernel_spec(meta)
    saved = torch.load(HERE / "case.pt", map_location="cpu", weights_only=False)
    print(f"{meta['case']}  config {json.dumps(meta['config'], sort_keys=True)}")
    print(f"failed in the suite on {meta['toolchain']['backend']} ({meta['toolchain']['device']}), triton "
          f"{meta['toolchain']['triton']}, torch {meta['toolchain']['torch']}: {meta['message'].splitlines()[0]}")
    import triton

    print(f"rerun here on {'the GPU' if device == 'cuda' else 'the CPU interpreter'} "
          f"({torch.cuda.get_device_name() if device == 'cuda' else 'TRITON_INTERPRET=1'}), triton "
          f"{triton.__version__}, torch {torch.__version__}; numerics flags then: {meta['toolchain']['flags'] or 'none'}")
    _pin_autotuned(module, meta["config"])
    values, bases = _rebuild(saved, device)
    inputs = {k: values[k] for k in meta["inputs"]}
    outputs = {k: values[k] for k in meta["outputs_passed"]}
    try:
        returned = spec.run(inputs, outputs, dict(meta["config"]))
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - the launch itself failed: the finding as this machine shows it
        print(f"the launch raised {type(exc).__name__}: {exc}")
        return 1
    if not meta["outputs_passed"]:  # the launcher allocates its outputs and returns them
        if isinstance(returned, dict):
            outputs = dict(returned)
        elif isinstance(returned, (tuple, list)):
            outputs = dict(zip(meta["outputs"], returned, strict=False))
        else:
            outputs = {meta["outputs"][0]: returned}
    problems = []
    for key, outside in _outside_views(saved, meta["outputs_passed"], "cpu").items():
        changed = outside & ~_same_bits(bases[key].detach().cpu(), saved["storages"][key])
        if changed.any():
            names = [n for n in meta["outputs_passed"] if saved["values"][n]["view_of"] == key]
            problems.append(f"{'/'.join(names)}: {int(changed.sum())} element(s) written outside the output (first at "
                            f"element {int(changed.nonzero()[0])} of its buffer, whose view starts at element "
                            f"{saved['values'][names[0]]['offset']}): an out-of-bounds store")
    for name in meta["outputs"]:
        out = outputs[name]
        poisoned = meta["poisoned"].get(name)
        if poisoned and out.dtype.is_floating_point:
            initial = saved["initial"][name]
            unwritten = _same_bits(out.detach().cpu(), initial) & torch.isnan(initial)
            if unwritten.any():
                problems.append(f"{name}: {int(unwritten.sum())} of {out.numel()} elements never written (they "
                                f"still hold the poison; first at {_index(int(unwritten.flatten().nonzero()[0]), out.shape)})")
                continue
        if problem := _compare(name, out, saved["expected"][name], saved["bound"][name]):
            problems.append(problem)
    print(f"bound: {meta['rule']}")
    for name, rule in meta["rules"].items():
        print(f"  {name} ({rule['dtype']}): safety {rule['safety']}, K {rule['reduction_length']}, u_out "
              f"{rule['u_out']:.3g}, accumulator {rule['accumulator']}, operand_u {rule['operand_u']:.3g}")
    if meta.get("memory"):
        print(f"the suite's finding: {meta['memory']}\n(an out-of-bounds read is not visible here: on an NVIDIA GPU run "
              f"`compute-sanitizer --tool memcheck python repro.py`; on AMD, Triton's AddressSanitizer build)")
    if problems:
        print("STILL WRONG:\n  " + "\n  ".join(problems))
        return 1
    if meta.get("memory") and "out-of-bounds load" in meta["memory"]:
        print("NOT CONFIRMED: values and stores are right here, but the suite found an out-of-bounds read, which this "
              "script cannot see: rerun it under the vendor's memory checker (above)")
        return 3
    print("RIGHT: every output within its bound of the reference, every element written, nothing written outside")
    return 0


if __name__ == "__main__":
    sys.exit(main())
