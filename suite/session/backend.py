"""Which backend a run uses, and what the machine says about its device.

Resolution must happen before any kernel module is imported: Triton reads
TRITON_INTERPRET when ``@triton.jit`` decorates a function.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

BACKENDS = ("auto", "interpret", "cuda", "rocm")


class BackendUnavailable(Exception):
    """The requested backend cannot run on this machine; the message says why and what would."""


@dataclass
class Backend:
    name: str  # interpret | cuda | rocm
    device: str  # torch device string: cpu for the interpreter, cuda for both GPU vendors
    family: str  # interpret | nvidia | amd: picks configs and tolerances
    device_name: str
    arch: str
    sm_count: int
    warp_size: int
    profile: object = None
    profile_note: str | None = None
    details: dict = field(default_factory=dict)

    def supports(self, dtype: str) -> bool:
        return self.profile.supports(dtype)


def _kernel_modules_loaded() -> list[str]:
    """Kernel modules (which hold @triton.jit functions) already imported."""
    plain = {"spec", "registry", "validation", "inputs", "paths"}
    return sorted(m for m in sys.modules if m.startswith("kernels.")
                  and not m.split(".")[1].startswith("_") and m.split(".")[1] not in plain)


def _torch_build() -> tuple[str, str | None, str | None]:
    import torch

    return torch.__version__, torch.version.cuda, getattr(torch.version, "hip", None)


# --- what a run will see, without importing torch ----------------------------------------------------
# An xdist controller that imports torch before its workers start holds every worker back by that import (3-5 s on
# an H100 host). It needs only the GPU count to start and pin them; these answer it from torch's version.py and the
# CUDA driver, and say None where only torch can tell.

CUDA_ERROR_NO_DEVICE = 100


def torch_build_unimported() -> tuple[str, str | None, str | None] | None:
    """(version, CUDA version, HIP version) of the installed torch, read from its version.py without importing
    the package; None where that file is missing or not plain assignments."""
    import ast
    import importlib.util
    from pathlib import Path

    try:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            return None
        tree = ast.parse((Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text())
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    values = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None)
        if isinstance(target, ast.Name):
            try:
                values[target.id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    version = values.get("__version__")
    if not isinstance(version, str):
        return None
    return version, values.get("cuda"), values.get("hip")


def cuda_driver_device_count(library: str = "libcuda.so.1") -> int | None:
    """Devices the CUDA driver shows this process (it applies CUDA_VISIBLE_DEVICES, as torch's count does); 0
    where there is no driver library or no device; None where the driver fails otherwise."""
    import ctypes

    if not sys.platform.startswith("linux"):
        return None
    try:
        lib = ctypes.CDLL(library)
    except OSError:
        return 0
    rc = lib.cuInit(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return 0
    count = ctypes.c_int(0)
    if rc != 0 or lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return None
    return count.value


def probe(requested: str, environ: dict[str, str] | None = None,
          driver_count=cuda_driver_device_count, build=torch_build_unimported) -> tuple[str, int] | None:
    """(family, visible GPUs) of the backend ``requested`` resolves to, without importing torch: the family is
    interpret, nvidia or amd. None where only torch can tell: a ROCm build of torch (its devices are left to torch),
    a CUDA driver that fails to start, a torch without a readable version.py."""
    env = os.environ if environ is None else environ
    interpret = env.get("TRITON_INTERPRET", "0") not in ("", "0")
    if requested == "interpret" or (requested == "auto" and interpret):
        return "interpret", 0
    found = build()
    if found is None:
        return None
    _, cuda_v, hip_v = found
    if hip_v:
        return None
    if requested == "rocm":  # not a ROCm build: the backend refuses it (with torch's own words) after the start
        return "amd", 0
    count = driver_count() if cuda_v else 0
    if count is None:
        return None
    if requested == "auto" and count == 0:
        return "interpret", 0
    return "nvidia", count


def _gpu_backend(requested: str, driver: bool = True) -> Backend:
    import torch

    version, cuda_v, hip_v = _torch_build()
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        raise BackendUnavailable(
            f"--backend={requested} asked, but TRITON_INTERPRET={os.environ['TRITON_INTERPRET']} is set in the "
            "environment, which would run every kernel on the CPU interpreter; unset it, or use --backend=interpret")
    if requested == "cuda" and hip_v:
        raise BackendUnavailable(
            f"--backend=cuda asked, but this torch ({version}) is a ROCm build (HIP {hip_v}); "
            "use --backend=rocm on this machine")
    if requested == "rocm" and not hip_v:
        build = f"a CUDA build (CUDA {cuda_v})" if cuda_v else "a CPU-only build"
        raise BackendUnavailable(
            f"--backend=rocm asked, but this torch ({version}) is {build} with no HIP runtime; "
            "use a ROCm build of torch on an AMD GPU runner, or "
            + ("--backend=cuda" if cuda_v else "--backend=interpret (or --backend=auto)") + " here")
    if requested == "cuda" and not cuda_v:
        raise BackendUnavailable(
            f"--backend=cuda asked, but this torch ({version}) is a CPU-only build; install a CUDA build of torch "
            "on a GPU runner, or use --backend=interpret (or --backend=auto) here")
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        visible = os.environ.get("HIP_VISIBLE_DEVICES" if hip_v else "CUDA_VISIBLE_DEVICES")
        raise BackendUnavailable(
            f"--backend={requested} asked, but torch sees no GPU (torch.cuda.device_count() == 0"
            + (f", visible-devices variable = {visible!r}" if visible is not None else "")
            + "); run on a GPU runner, or use --backend=interpret")
    props = torch.cuda.get_device_properties(0)
    if hip_v:
        arch = props.gcnArchName.split(":")[0]
        warp = getattr(props, "warp_size", 64)
    else:
        arch = f"sm_{props.major}{props.minor}"
        warp = getattr(props, "warp_size", 32)
    return Backend(name=requested, device="cuda", family="amd" if hip_v else "nvidia", device_name=props.name,
                   arch=arch, sm_count=props.multi_processor_count, warp_size=warp,
                   details={"total_memory_bytes": props.total_memory,
                            "driver": _driver_version(bool(hip_v)) if driver else None,
                            "runtime": f"HIP {hip_v}" if hip_v else f"CUDA {cuda_v}",
                            "shared_memory_per_block_bytes": getattr(props, "shared_memory_per_block_optin", None)})


def _driver_version(hip: bool) -> str | None:
    cmd = (["rocm-smi", "--showdriverversion"] if hip else
           ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    if hip:  # a banner, then "Driver version: 6.8.5" (rocm-smi 5.x and 6.x)
        found = re.search(r"Driver version:\s*(\S+)", out)
        return found.group(1) if found else None
    return out.splitlines()[0].strip() if out else None


def resolve(requested: str, driver: bool = True) -> Backend:
    """Pick the backend; set TRITON_INTERPRET for the interpreter. Raises BackendUnavailable. ``driver``: ask the
    vendor's tool for the driver version (the run file's; xdist workers, which write none, skip the subprocess)."""
    import hardware_profiles

    if requested not in BACKENDS:
        raise BackendUnavailable(f"--backend={requested!r} is not a backend; choose one of {', '.join(BACKENDS)}")
    if requested == "auto":
        version, cuda_v, hip_v = _torch_build()
        if os.environ.get("TRITON_INTERPRET", "0") in ("", "0") and (cuda_v or hip_v):
            import torch

            if torch.cuda.is_available() and torch.cuda.device_count() > 0:
                requested = "rocm" if hip_v else "cuda"
        if requested == "auto":
            requested = "interpret"
    if requested == "interpret":
        loaded = _kernel_modules_loaded()
        if loaded and os.environ.get("TRITON_INTERPRET") != "1":
            raise BackendUnavailable(
                f"--backend=interpret asked, but kernel modules were imported before the backend was chosen "
                f"({', '.join(loaded)}); TRITON_INTERPRET must be set first: run pytest from the repository root")
        os.environ["TRITON_INTERPRET"] = "1"
        profile = hardware_profiles.interpreter_profile()
        return Backend(name="interpret", device="cpu", family="interpret", device_name="Triton CPU interpreter",
                       arch=profile.arch, sm_count=1, warp_size=profile.warp_size, profile=profile)
    backend = _gpu_backend(requested, driver)
    backend.profile, backend.profile_note = hardware_profiles.detect(
        backend.arch, backend.device_name, backend.sm_count, backend.warp_size,
        backend.details.get("shared_memory_per_block_bytes"))
    return backend
