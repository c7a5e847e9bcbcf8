"""Which GPUs' arithmetic ``--numerics=PROFILE`` can model on the interpreter, and how: data only (no torch).

Each modelled arch names the bit-accurate model of its matrix instructions in mmasim 2.1.1 (arXiv 2511.10909), the
instruction Triton 3.6.0 emits for each operand dtype, the input precision an fp32 ``tl.dot`` gets when it names
none, and what the instruction flushes. The instructions were read from Triton 3.6.0's own output, compiled on the
CPU for each target (``triton.compile`` of a 64 x 64 x 32 ``tl.dot`` with ``num_warps=4``; the compile matrix's
``suite/tools/compile_matrix.py`` greps the same PTX/AMDGCN for its tensor-core column):

- sm_80: fp16 mma m16n8k16 f16; bf16 mma m16n8k16 bf16; fp32 default mma m16n8k8 tf32; fp32 ieee fma.rn.f32
  chain; fp8e5 upcast to fp16, then the f16 mma.
- sm_90: wgmma m64nNk16 f16 / bf16; fp32 default wgmma m64nNk8 tf32; ieee fma.rn.f32 chain; fp8 wgmma m64nNk32
  e4m3/e5m2.
- gfx90a: v_mfma_f32_32x32x8f16; v_mfma_f32_32x32x8bf16_1k; fp32 v_mfma_f32_32x32x2f32 by default and in ieee
  (``tf32`` does not compile); OCP fp8 upcast to fp16, then the f16 mfma.
- gfx942: v_mfma_f32_32x32x8_f16; v_mfma_f32_32x32x8_bf16; fp32 default v_mfma_f32_32x32x4_xf32; ieee
  v_mfma_f32_32x32x2_f32; FNUZ fp8 v_mfma_f32_32x32x16_fp8_fp8; OCP fp8 upcast to fp16, then the f16 mfma.

A smaller tile picks another M x N of the same family (16x16x16 f16, mma m16n8k8, ...); in mmasim the arithmetic of a
family depends on the operand type alone (the chunk of K fused at once: ``L_max``, CDNA2's pair/quad ``P``), never on
M or N, so one model per operand type serves every tile. The K order is Triton's: the instructions of a ``tl.dot``
over K in order, each ``tl.dot`` onto the accumulator it was given. On sm_90 an fp8 dot with an fp32 accumulator whose
``max_num_imprecise_acc`` is at most its K is accumulated in a fresh partial accumulator, added to the main one in
fp32 every ``max_num_imprecise_acc`` elements of K (Triton's WGMMA.cpp, ``needsPartialAccumulator``); the default is
2**30 on sm_90 (never), 0 elsewhere.

``tl.fma`` (read from the same compiled output, a 128-element ``tl.fma`` per dtype, Triton 3.6.0): sm_80 and sm_90
``fma.rn.f32``, ``fma.rn.f16``, ``fma.rn.bf16``; gfx90a and gfx942 ``v_fmac_f32`` (fp32, and bf16 widened to fp32),
``v_fma_f16``: every one fused, rounded once to its type; AMD's bf16 once to fp32, then to bf16 (``FMA``).

``tl.sum``: the order of Triton's reduction lowering on each vendor (suite/checks/numerics_reduce.py, with the
instruction sequences read): lanes per warp 32 on NVIDIA, 64 on AMD (``Model.warp_size``).

Flushes (what the modelled instruction does to subnormals; mmasim's model, arXiv 2511.10909 section on CDNA2):

- gfx90a: fp16 and bf16 subnormal operands, products and partial sums of ``v_mfma`` flushed to +0 (mmasim's
  ``MMA_FTZ_MUL_ADD``; pytorch issue 182952, "silent training divergence").
- sm_80, sm_90, gfx942: no operand flushed (mmasim's ``MMA_T_FDPA``/``MMA_TR_FDPA``: products far below the largest
  are truncated inside the fused sum, which is the instruction's rounding, not a flush).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Model:
    """One arch's matrix arithmetic as mmasim models it."""

    arch: str
    vendor: str
    mmasim_arch: str  # mmasim's name: "Ampere", "Hopper", "CDNA2", "CDNA3"
    family: str  # the instruction family: "mma", "wgmma", "mfma"
    instructions: dict[str, str]  # operand type -> mmasim instruction (shape and types)
    fp8_upcast: tuple[str, ...]  # fp8 operand types Triton widens to fp16 on this arch before the f16 instruction
    default_fp32: str  # the input precision of an fp32 tl.dot that names none: "tf32" (TF32/XF32) or "ieee"
    allowed_fp32: tuple[str, ...]  # input precisions the target's Triton accepts for fp32 operands
    imprecise_acc_default: int  # Triton's max_num_imprecise_acc for an fp8 dot that names none
    flushes: dict[str, str] = field(default_factory=dict)  # operand type -> what the instruction flushes

    @property
    def warp_size(self) -> int:
        return 32 if self.vendor == "nvidia" else 64

    def modelled(self) -> list[str]:
        """What the model covers, for the run file and the header."""
        parts = [f"tl.dot {t}: {self.family} {i} (mmasim {self.mmasim_arch})" for t, i in self.instructions.items()]
        parts += [f"tl.dot {t}: upcast to fp16, then {self.instructions['fp16']}" for t in self.fp8_upcast]
        parts.append("tl.dot fp32 ieee: fp32 fma chain in K order")
        parts.append(f"fp32 tl.dot default input precision: {self.default_fp32}")
        parts += [f"flush: {what}" for what in self.flushes.values()]
        parts += [f"tl.fma {t}: {how}" for t, how in FMA[self.vendor].items()]
        parts.append(f"tl.sum fp16/bf16/fp32/fp64: {self.vendor}'s reduction order, {self.warp_size} lanes a warp, "
                     f"over Triton's coalesced layout of the block (an approximation: suite/checks/numerics_reduce.py)")
        parts += [f"envelope {APPROX_NAMES[n]} fp32: {a.instruction}, {a.ulps} ulp" for n, a in APPROX[self.vendor].items()]
        return parts


FMA: dict[str, dict[str, str]] = {  # tl.fma per dtype as Triton 3.6.0 compiles it (module docstring)
    "nvidia": {"fp32": "fma.rn.f32, one rounding", "fp16": "fma.rn.f16, one rounding",
               "bf16": "fma.rn.bf16, one rounding"},
    "amd": {"fp32": "v_fmac_f32, one rounding", "fp16": "v_fma_f16, one rounding",
            "bf16": "v_fmac_f32 on widened operands, rounded to fp32 then to bf16"},
}
# What --numerics models, as the run file's environment.numerics.parts says.
PARTS = ("dot", "fma", "reduce order", "envelopes", "fp8 conversion")

_CDNA2_FLUSH = "fp16 subnormal operands flushed by CDNA2's matrix cores (gfx90a)"
_CDNA2_FLUSH_BF16 = "bf16 subnormal operands flushed by CDNA2's matrix cores (gfx90a)"

MODELS: dict[str, Model] = {
    "sm_80": Model("sm_80", "nvidia", "Ampere", "mma",
                   {"fp16": "m16n8k16.f32.f16.f16.f32", "bf16": "m16n8k16.f32.bf16.bf16.f32",
                    "tf32": "m16n8k8.f32.tf32.tf32.f32"},
                   ("fp8e5",), "tf32", ("tf32", "ieee"), 0),
    "sm_90": Model("sm_90", "nvidia", "Hopper", "wgmma",
                   {"fp16": "m64n8k16.f32.f16.f16", "bf16": "m64n8k16.f32.bf16.bf16", "tf32": "m64n8k8.f32.tf32.tf32",
                    "fp8e4nv": "m64n8k32.f32.e4m3.e4m3", "fp8e5": "m64n8k32.f32.e5m2.e5m2",
                    "fp8e4nv*fp8e5": "m64n8k32.f32.e4m3.e5m2", "fp8e5*fp8e4nv": "m64n8k32.f32.e5m2.e4m3"},
                   (), "tf32", ("tf32", "ieee"), 2**30),
    "gfx90a": Model("gfx90a", "amd", "CDNA2", "mfma",
                    {"fp16": "f32_32x32x8f16", "bf16": "f32_32x32x8bf16_1k"},
                    ("fp8e4nv", "fp8e5"), "ieee", ("ieee",), 0,
                    {"fp16": _CDNA2_FLUSH, "bf16": _CDNA2_FLUSH_BF16}),
    "gfx942": Model("gfx942", "amd", "CDNA3", "mfma",
                    {"fp16": "f32_32x32x8_f16", "bf16": "f32_32x32x8_bf16", "tf32": "f32_32x32x4_xf32",
                     "fp8e4b8": "f32_32x32x16_fp8_fp8", "fp8e5b16": "f32_32x32x16_bf8_bf8",
                     "fp8e4b8*fp8e5b16": "f32_32x32x16_fp8_bf8", "fp8e5b16*fp8e4b8": "f32_32x32x16_bf8_fp8"},
                    ("fp8e4nv", "fp8e5"), "tf32", ("tf32", "ieee"), 0),
}

# Archs with shipped profiles whose matrix arithmetic is not modelled: refused, never guessed.
UNMODELLED: dict[str, str] = {
    "gfx950": "CDNA4 (gfx950) matrix cores: no public bit-accurate model (mmasim 2.1.1 models MFMA on CDNA1-3 only)",
    "sm_100": "Blackwell (sm_100) tcgen05.mma: mmasim 2.1.1 has a model, but the instructions and K order Triton "
              "3.6.0 emits for sm_100 are not yet checked here against compiled code",
}


def model_for(arch: str) -> Model | None:
    return MODELS.get(arch)


@dataclass(frozen=True)
class Approx:
    """One operation Triton 3.6.0 lowers to an approximate fp32 instruction on a vendor, and its error bound."""

    instruction: str
    ulps: int  # the envelope: results moved this many fp32 ulps either way
    source: str  # where the bound comes from, and whether it was read here


# The operations (interpreter builder's name -> the kernel's spelling) whose fp32 results --numerics moves to the ends
# of their instruction's error envelope (docs/hazards.md's table; the instructions read from Triton 3.6.0's PTX and
# AMDGCN). A bound not read here in the vendor's document is one ulp above the recalled figure (conservative: a wider
# envelope names more cases vendor-sensitive, never fewer).
APPROX_NAMES = {"create_exp2": "tl.exp2", "create_exp": "tl.exp", "create_sqrt": "tl.sqrt",
                "create_rsqrt": "tl.math.rsqrt", "create_fdiv": "`/`", "create_log2": "tl.log2", "create_log": "tl.log"}
APPROX: dict[str, dict[str, Approx]] = {
    "nvidia": {
        "create_exp2": Approx("ex2.approx.ftz.f32", 2, "PTX ISA, ex2: 'the maximum ulp error is 2 ulp from correctly "
                              "rounded result across the full range of inputs' (read in a stored copy of the ISA)"),
        "create_exp": Approx("ex2.approx.f32 of x * log2(e)", 2, "ex2.approx's 2 ulp (PTX ISA) around 2^fl(x * log2 e): "
                             "the fp32 product Triton emits before it, rounded as the GPU rounds it"),
        "create_sqrt": Approx("sqrt.approx.ftz.f32", 3, "recalled as a relative error of 2^-23 (up to 2 ulp), not "
                              "read here: 3 ulp; an H200 gave at most 1 ulp over every positive normal fp32 input "
                              "(evidence/numerics/h200/approx_ulps.json)"),
        "create_rsqrt": Approx("rsqrt.approx.ftz.f32", 3, "PTX ISA: 'the maximum relative error for rsqrt.f32 over the "
                               "entire positive finite floating-point range is 2^-22.9' (quoted in a PTX test, not "
                               "read in the ISA here): up to 2.14 ulp, 3; an H200 gave at most 2 ulp over every "
                               "positive normal fp32 input (evidence/numerics/h200/approx_ulps.json)"),
        "create_fdiv": Approx("div.full.f32", 2, "PTX ISA, div: 'the maximum ulp error is 2 across the full range of "
                              "inputs' (read in a stored copy of the ISA)"),
    },
    "amd": {
        "create_exp2": Approx("v_exp_f32", 2, "1 ulp for llvm.exp2's float instruction (LLVM's AMDGPUUsage.rst, read "
                              "in reviews.llvm.org D153024: 'Hardware provides 1ULP accuracy for float'); not "
                              "measured here (no AMD GPU): 2 ulp"),
        "create_exp": Approx("v_exp_f32 of x * log2(e), scaled by v_ldexp_f32", 2,
                             "v_exp_f32's 1 ulp (LLVM's AMDGPUUsage.rst, D153024), the product's rounding not read: "
                             "2 ulp, around both 2^fl(x * log2 e) and exp(x) correctly rounded"),
        "create_sqrt": Approx("v_sqrt_f32", 2, "'Instruction is 1ulp but ignores denormals' (LLVM's "
                              "SIISelLowering.cpp, lowerFSQRTF32, read in llvm-project PR 114173); not measured "
                              "here: 2 ulp"),
        "create_rsqrt": Approx("v_rsq_f32", 2, "recalled as 1 ulp, not read here: 2 ulp"),
        "create_log2": Approx("v_log_f32", 2, "1 ulp for llvm.log2's float instruction (LLVM's AMDGPUUsage.rst, read "
                              "in reviews.llvm.org D153022), not measured here, nor what Triton emits for it: 2 ulp "
                              "of the result (near x = 1 the instruction's error may be absolute: not modelled)"),
        "create_log": Approx("v_log_f32 times ln 2", 2, "as v_log_f32, and the product's rounding, not read here: "
                             "2 ulp around log(x) correctly rounded"),
    },
}
