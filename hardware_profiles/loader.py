"""Reading and checking the hardware profiles (profiles/*.json), and building one for a GPU none describes.

Pure Python (no torch or triton), so reports and the compile matrix can use it on any machine.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
DTYPES = ("fp32", "fp16", "bf16", "tf32", "fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16")
FP8_BY_FLAVOUR = {"ocp": ("fp8e4nv", "fp8e5"), "fnuz": ("fp8e4b8", "fp8e5b16")}
PEAK_KEYS = ("fp32", "tf32", "fp16", "bf16", "fp8")
# One profile per compile-matrix target, in target order.
REPRESENTATIVES = {"sm_80": "a100_80gb", "sm_90": "h100_sxm", "sm_100": "b200",
                   "gfx90a": "mi250x_gcd", "gfx942": "mi300x", "gfx950": "mi355x"}
_ALIASES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float8_e4m3fn": "fp8e4nv",
            "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
            "float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16"}
# Every target runs these; they are not gated per profile.
_ALWAYS = frozenset({"fp64", "float64", "bool", "int8", "uint8", "int16", "int32", "int64"})
_ARCH_RE = re.compile(r"sm_\d+|gfx[0-9a-f]+")


class ProfileError(ValueError):
    """A profile file is unreadable, or a field is missing, unknown, of the wrong type or inconsistent."""


@dataclass(frozen=True)
class Profile:
    key: str
    name: str
    arch: str
    vendor: str
    family: str
    device_names: tuple[str, ...]
    sm_count: int
    warp_size: int
    max_threads_per_block: int
    shared_memory_per_block_bytes: int
    max_registers_per_thread: int
    registers_per_sm: int | None
    vgprs_per_lane: int | None
    max_threads_per_sm: int | None
    memory_gb: float | None
    peak_bandwidth_tbs: float | None
    peak_tflops: dict[str, float | None]
    l2_mb: float | None
    llc_mb: float | None
    dtypes: tuple[str, ...]
    fp8_flavour: str | None
    fp32_dot_precision: str
    uncertain: tuple[str, ...]
    sources: dict[str, str]
    notes: str
    path: str
    detected: bool = False

    def supports(self, dtype: str) -> bool:
        """Whether this target can run `dtype` (Triton name such as "fp8e4nv", or a torch/tl name)."""
        name = dtype.removeprefix("torch.").removeprefix("tl.")
        if name in _ALWAYS:
            return True
        name = _ALIASES.get(name, name)
        if name not in DTYPES:
            raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPES + tuple(sorted(_ALWAYS)))}")
        return name in self.dtypes

    def fp8_dtypes(self) -> tuple[str, ...]:
        return tuple(d for d in self.dtypes if d.startswith("fp8"))

    def to_record(self) -> dict:
        """JSON-able summary for result files (everything but the device-name patterns and notes)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("device_names", "notes")}
        return {k: list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, dict) else v
                for k, v in values.items()}


_FILE_FIELDS = tuple(f.name for f in fields(Profile) if f.name not in ("key", "path", "detected"))
_FIELD_REFS = frozenset(_FILE_FIELDS + tuple(f"peak_tflops.{k}" for k in PEAK_KEYS))


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0


def _opt(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or check(v)


def _strs(v: Any, allowed: frozenset | tuple | None = None, empty: bool = False) -> bool:
    return (isinstance(v, list) and (empty or bool(v)) and len(set(map(str, v))) == len(v)
            and all(isinstance(s, str) and s and (allowed is None or s in allowed) for s in v))


_POSITIVE = "must be a positive integer"
_FLOATS = ("memory_gb", "peak_bandwidth_tbs", "l2_mb", "llc_mb")
_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    **{k: (_int, _POSITIVE) for k in ("sm_count", "max_threads_per_block", "shared_memory_per_block_bytes",
                                      "max_registers_per_thread")},
    **{k: (_opt(_int), f"{_POSITIVE} or null") for k in ("registers_per_sm", "vgprs_per_lane", "max_threads_per_sm")},
    **{k: (_opt(_num), "must be a positive number or null") for k in _FLOATS},
    **{k: (lambda v: v in ("nvidia", "amd"), "must be 'nvidia' or 'amd'") for k in ("vendor", "family")},
    "name": (lambda v: isinstance(v, str) and bool(v), "must be a non-empty string"),
    "notes": (lambda v: isinstance(v, str), "must be a string"),
    "arch": (lambda v: isinstance(v, str) and bool(_ARCH_RE.fullmatch(v)), "must be an arch like 'sm_90' or 'gfx942'"),
    "device_names": (_strs, "must be a non-empty list of distinct non-empty strings"),
    "warp_size": (lambda v: _int(v) and v in (32, 64), "must be 32 or 64"),
    "peak_tflops": (lambda v: isinstance(v, dict) and sorted(v) == sorted(PEAK_KEYS)
                    and all(_opt(_num)(x) for x in v.values()),
                    f"must be an object with exactly the keys {', '.join(PEAK_KEYS)}, each a positive number or null"),
    "dtypes": (lambda v: _strs(v, DTYPES), f"must be a non-empty list of distinct names from {', '.join(DTYPES)}"),
    "fp8_flavour": (lambda v: v in ("ocp", "fnuz", None), "must be 'ocp', 'fnuz' or null"),
    "fp32_dot_precision": (lambda v: v in ("tf32", "xf32", "ieee"), "must be 'tf32', 'xf32' or 'ieee'"),
    "uncertain": (lambda v: _strs(v, _FIELD_REFS, empty=True), "must be a list of field names (or 'peak_tflops.X')"),
    "sources": (lambda v: isinstance(v, dict) and "default" in v and all(
        k in _FIELD_REFS | {"default"} and isinstance(s, str) and s for k, s in v.items()),
        "must be an object with a 'default' key, keys naming fields, and non-empty string values"),
}


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):  # json would silently keep the last of two equal keys
        raise ValueError(f"duplicate key(s) {sorted({k for k in keys if keys.count(k) > 1})}")
    return dict(pairs)


def load_profile(path: str | Path) -> Profile:
    """Read and validate one profile file; raises ProfileError naming the file and the field."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
    except (OSError, ValueError) as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc}") from exc
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: a profile must be a JSON object, got {type(data).__name__}")

    def fail(name: str, problem: str, value: Any = ...) -> ProfileError:
        return ProfileError(f"{path}: field '{name}' {problem}" + ("" if value is ... else f", got {value!r}"))

    for name in data:
        if name not in _CHECKS:
            raise fail(name, f"is not a profile field (known: {', '.join(_FILE_FIELDS)})")
    for name in _FILE_FIELDS:
        check, problem = _CHECKS[name]
        if name not in data:
            raise fail(name, "is missing")
        if not check(data[name]):
            raise fail(name, problem, data[name])
    if data["family"] != data["vendor"]:
        raise fail("family", f"must equal vendor {data['vendor']!r}", data["family"])
    if data["arch"].startswith("sm_") != (data["vendor"] == "nvidia"):
        raise fail("arch", f"does not belong to vendor {data['vendor']!r}", data["arch"])
    needed = "registers_per_sm" if data["vendor"] == "nvidia" else "vgprs_per_lane"
    if data[needed] is None:
        raise fail(needed, f"is required for vendor {data['vendor']!r}", None)
    fp8 = tuple(d for d in data["dtypes"] if d.startswith("fp8"))
    if sorted(fp8) != sorted(FP8_BY_FLAVOUR.get(data["fp8_flavour"], ())):
        raise fail("fp8_flavour", f"does not match the fp8 names in dtypes {list(fp8)}", data["fp8_flavour"])
    values = {k: float(v) if k in _FLOATS and v is not None else tuple(v) if isinstance(v, list) else v
              for k, v in data.items()}
    values["peak_tflops"] = {k: None if v is None else float(v) for k, v in data["peak_tflops"].items()}
    return Profile(key=path.stem, path=str(path), **values)


_DEFAULT: dict[str, Profile] | None = None
_SKIPPED: dict[str, str] = {}  # shipped file -> why it was left out


def load_all(directory: str | Path | None = None) -> dict[str, Profile]:
    """key -> Profile for every *.json in ``directory``, strictly (the first bad file raises ProfileError). The shipped
    profiles/ (no ``directory``, read once) are read leniently: a stray or malformed file is left out and named by
    :func:`skipped`, so one bad file does not stop every run; a lookup that needs it names it."""
    global _DEFAULT
    if directory is not None:
        return {p.stem: load_profile(p) for p in sorted(Path(directory).glob("*.json"))}
    if _DEFAULT is None:
        profiles = {}
        for path in sorted(PROFILES_DIR.glob("*.json")):
            try:
                profiles[path.stem] = load_profile(path)
            except ProfileError as exc:
                _SKIPPED[str(path)] = str(exc)
        _DEFAULT = profiles
    return dict(_DEFAULT)


def skipped() -> dict[str, str]:
    """Shipped profile files left out as unreadable: path -> the reason."""
    load_all()
    return dict(_SKIPPED)


def get(key_or_arch: str) -> Profile:
    """A shipped profile by file key ("h100_sxm"), or the representative of an arch ("sm_90")."""
    profiles = load_all()
    if key_or_arch in profiles:
        return profiles[key_or_arch]
    if key_or_arch in REPRESENTATIVES:
        return representative(key_or_arch)
    raise KeyError(f"no hardware profile {key_or_arch!r}; keys: {', '.join(profiles)}; "
                   f"archs: {', '.join(REPRESENTATIVES)}")


def by_arch(arch: str) -> list[Profile]:
    return [p for p in load_all().values() if p.arch == arch]


def representative(arch: str) -> Profile:
    if arch not in REPRESENTATIVES:
        raise KeyError(f"no representative profile for arch {arch!r}; archs: {', '.join(REPRESENTATIVES)}")
    profiles, key = load_all(), REPRESENTATIVES[arch]
    if key not in profiles:
        why = next((r for p, r in skipped().items() if Path(p).stem == key), f"{PROFILES_DIR / key}.json is missing")
        raise ProfileError(f"the {arch} profile cannot be used: {why}")
    return profiles[key]


def targets() -> list[tuple[str, str, int]]:
    """Compile-matrix targets (backend, arch, warp size), as triton's GPUTarget takes them."""
    return [("cuda" if p.vendor == "nvidia" else "hip", p.arch, p.warp_size)
            for p in map(representative, REPRESENTATIVES)]


def _normalize_arch(arch: str) -> str:
    arch = arch.strip().lower().split(":")[0]  # gcnArchName carries ":sramecc+:xnack-"
    m = re.fullmatch(r"sm_(\d+)[af]?", arch)
    return f"sm_{m[1]}" if m else arch


def _arch_capabilities(arch: str) -> tuple[str, tuple[str, ...], str | None, str, str | None]:
    """(vendor, dtypes, fp8 flavour, fp32 dot precision, guess note or None) for an arch with or without a profile."""
    base, ocp, fnuz = ("fp32", "fp16", "bf16"), FP8_BY_FLAVOUR["ocp"], FP8_BY_FLAVOUR["fnuz"]
    guess = f"{arch} capabilities extrapolated from neighbouring archs"
    if m := re.fullmatch(r"sm_(\d+)", arch):
        cap = int(m[1])
        if cap < 80:  # pre-Ampere: no bf16 or tf32 tensor cores, fp32 dot runs in fp32
            return "nvidia", ("fp32", "fp16"), None, "ieee", None if 70 <= cap < 80 else guess
        if cap < 89:
            return "nvidia", base + ("tf32",), None, "tf32", None if cap in (80, 86, 87) else guess
        return "nvidia", base + ("tf32",) + ocp, "ocp", "tf32", None if cap in (89, 90, 100, 120) else guess
    if arch == "gfx90a":
        return "amd", base, None, "ieee", None
    if re.fullmatch(r"gfx94[0-9a-f]", arch):
        return "amd", base + ("tf32",) + fnuz, "fnuz", "xf32", None if arch == "gfx942" else guess
    if arch == "gfx950":
        return "amd", base + ocp, "ocp", "ieee", None
    if re.fullmatch(r"gfx1[12][0-9a-f]+", arch):
        return "amd", base, None, "ieee", f"RDNA {arch} taken as bf16 and no fp8"
    if arch.startswith("gfx"):
        return "amd", ("fp32", "fp16"), None, "ieee", guess
    raise ValueError(f"unrecognised arch {arch!r}: expected 'sm_NN' (NVIDIA) or 'gfxNNN' (AMD)")


def detect(arch: str, device_name: str, sm_count: int, warp_size: int,
           shared_memory_per_block_bytes: int | None = None) -> tuple[Profile, str | None]:
    """The shipped profile of this device, or one built from what it reports (with a message saying so)."""
    if not (_int(sm_count) and _int(warp_size)):
        raise ValueError(f"detect: sm_count and warp_size must be positive integers, got {sm_count!r}, {warp_size!r}")
    arch = _normalize_arch(arch)
    vendor, dtypes, flavour, precision, guess = _arch_capabilities(arch)
    lowered = device_name.lower()
    same_arch = by_arch(arch)
    exact = [(max(len(n) for n in p.device_names if n.lower() in lowered), p) for p in same_arch
             if p.sm_count == sm_count and any(n.lower() in lowered for n in p.device_names)]
    if exact:
        return max(exact, key=lambda item: item[0])[1], None
    # Limits that belong to the arch, not the part: from a shipped profile of this arch, else the vendor's.
    model, nv = (same_arch[0] if same_arch else None), vendor == "nvidia"
    limits = {"max_threads_per_block": 1024, "max_registers_per_thread": 255 if nv else 512,
              "registers_per_sm": 65536 if nv else None, "vgprs_per_lane": None if nv else 512,
              "max_threads_per_sm": 2048 if nv else None}
    limits = {k: getattr(model, k) for k in limits} if model else limits
    unknown = ["memory_gb", "peak_bandwidth_tbs", "peak_tflops", "l2_mb", "llc_mb"]
    assumed = [] if model else [k for k, v in limits.items() if v is not None]
    if shared_memory_per_block_bytes is None:
        shared_memory_per_block_bytes = model.shared_memory_per_block_bytes if model else 0
        (assumed if model else unknown).append("shared_memory_per_block_bytes")
    origin = f"the {model.key} profile" if model else f"{vendor} defaults (docs/hazards.md, per-SM/CU limits)"
    profile = _bare(
        key=f"detected-{arch}", name=device_name, arch=arch, vendor=vendor, family=vendor, device_names=(device_name,),
        sm_count=sm_count, warp_size=warp_size, shared_memory_per_block_bytes=shared_memory_per_block_bytes, **limits,
        dtypes=dtypes, fp8_flavour=flavour, fp32_dot_precision=precision, uncertain=tuple(assumed + unknown),
        sources={"default": "reported by the device at run time", **dict.fromkeys(assumed, origin)},
        notes=f"Built at run time from what the device reports; arch limits from {origin}." + (
            f" Guess: {guess}." if guess else ""), path="<detected>", detected=True)
    unit = "SMs" if nv else "CUs"
    shipped = "; ".join(f"{p.key}: {p.device_names[0]!r}, {p.sm_count} {unit}" for p in same_arch) or "none"
    message = " ".join([
        f"GPU {device_name!r} ({arch}, {sm_count} {unit}, warp {warp_size}) matches no shipped hardware profile"
        f" ({arch} profiles: {shipped}).",
        f"Using a profile built from what the device reports, with {arch} capabilities: dtypes {', '.join(dtypes)};"
        f" fp8 {flavour or 'none'}; fp32 dot {precision}" + (f" (a guess: {guess})." if guess else "."),
        f"Unknown: {', '.join(unknown)}." + (f" Assumed from {origin}: {', '.join(assumed)}." if assumed else ""),
        "Efficiencies against datasheet peaks are not computed; the run goes on."])
    return profile, message


def _bare(**values: Any) -> Profile:
    """A profile without datasheet figures: the figures not given are null."""
    blank = {k: None for k in ("memory_gb", "peak_bandwidth_tbs", "l2_mb", "llc_mb", "registers_per_sm",
                               "vgprs_per_lane", "max_threads_per_sm")}
    return Profile(**{**blank, "peak_tflops": dict.fromkeys(PEAK_KEYS), "uncertain": (), **values})


def interpreter_profile() -> Profile:
    """Triton's CPU interpreter (TRITON_INTERPRET=1): no fp8, fp32 dots in IEEE, no hardware figures."""
    return _bare(
        key="interpreter", name="Triton CPU interpreter", arch="interpreter", vendor="interpret", family="interpret",
        device_names=(), sm_count=1, warp_size=32, max_threads_per_block=0, shared_memory_per_block_bytes=0,
        max_registers_per_thread=0, dtypes=("fp32", "fp16", "bf16"), fp8_flavour=None, fp32_dot_precision="ieee",
        sources={"default": "Triton interpreter (no hardware)"},
        notes="No hardware limits or peaks; interpreter bf16 rounding differs from GPUs (docs/hazards.md, hazard 1).",
        path="<builtin>")
