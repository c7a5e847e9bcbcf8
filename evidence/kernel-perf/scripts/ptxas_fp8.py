"""fp8_scaled_matmul's shipped descriptor config compiled for sm_90 with no GPU, then its PTX assembled again by
Triton's bundled ptxas with warnings on: with the fp32 promotion (SCALED) ptxas reports that it injects a
warpgroup.wait before the adds; without it (plain fp8 dot) it does not. Run from the repository root."""
import os
import subprocess
import tempfile

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from kernels.tiles import matmul_descriptor_kernel

ptxas = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
for scaled in (True, False):
    sig = {"a_ptr": "*fp8e4nv", "b_ptr": "*fp8e4nv", "c_ptr": "*bf16", "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32",
           **{n: "i32" for n in ("M", "N", "K", "stride_am", "stride_b", "stride_cm")}}
    ce = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 256, "GROUP_M": 8, "B_K_MAJOR": True, "SCALED": scaled}
    sig.update({k: "constexpr" for k in ce})
    k = triton.compile(ASTSource(fn=matmul_descriptor_kernel, signature=sig, constexprs=ce), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 8, "num_stages": 3})
    with tempfile.TemporaryDirectory() as tmp:
        ptx = os.path.join(tmp, "k.ptx")
        open(ptx, "w").write(k.asm["ptx"])
        out = subprocess.run([ptxas, "-arch=sm_90a", "-v", "--warn-on-spills", ptx, "-o", os.path.join(tmp, "k.cubin")],
                             capture_output=True, text=True)
    print(f"SCALED={scaled}:", " | ".join(line.strip() for line in (out.stdout + out.stderr).splitlines()
                                          if "warning" in line or "registers" in line))
