"""On the GPU machine: exports from the interpreter and from the GPU, each folder's repro.py run on the GPU (and on the
interpreter where said), wrong and fixed."""
import json, os, re, subprocess, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
OUT = Path(os.environ.get("OUT", "/tmp/out"))
FIX = ROOT / "tests/fixtures/export_trust.py"
fixed = OUT / "fixed_trust.py"
fixed.write_text(re.sub(r"^(PLANTED_\w+ = (?:tl\.constexpr\()?)1", r"\g<1>0", FIX.read_text(), flags=re.M))
fixed_shared = OUT / "export_trust_shared.py"
fixed_shared.write_text((ROOT / "tests/fixtures/export_trust_shared.py").read_text().replace("PLANTED_SHARED = tl.constexpr(1)", "PLANTED_SHARED = tl.constexpr(0)"))
KERNELS = "export_trust_int,export_trust_bool,export_trust_writes_input,export_trust_race,export_trust_oob_read,export_trust_dot,export_trust_scalar,export_trust_shared"

def suite(backend, out):
    t = time.time()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-m", "pytest", "suite/test_kernels.py", "-p", "no:cacheprovider", f"--backend={backend}",
                        f"--kernel-module={FIX}", f"--kernel-module={ROOT / 'tests/fixtures/export_trust_shared.py'}",
                        f"--kernels={KERNELS}", "-n", "0", f"--export-failures={out}", f"--results-dir={OUT / ('runs-' + backend)}"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    v = re.search(r"VERDICT.*", r.stdout)
    print(f"suite {backend}: rc {r.returncode} in {time.time() - t:.0f}s; {v.group(0) if v else r.stdout[-1500:] + r.stderr[-1500:]}", flush=True)
    for line in (r.stdout + r.stderr).splitlines():
        if "could not be exported" in line:
            print("   ", line[:300])

def repro(folder, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "PYTHONPATH")}
    t = time.time()
    r = subprocess.run([sys.executable, "repro.py", *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    lines = r.stdout.splitlines()
    verdict = next((i for i, l in enumerate(lines) if l.split(":")[0] in ("RIGHT", "STILL WRONG", "CANNOT RUN HERE", "NOT CONFIRMED", "NOT TESTED")), None)
    text = " | ".join(lines[verdict:verdict + 3]) if verdict is not None else (r.stdout[-600:] + r.stderr[-600:])
    bound = next((l for l in lines if "fp32 dot precision" in l), "")
    cannot = [l for l in lines if l.startswith("cannot check here")]
    return r.returncode, text[:400], bound[:300], cannot, time.time() - t

for backend in ("interpret", "cuda"):
    out = OUT / f"exp-{backend}"
    suite(backend, out)
    if not out.exists():
        continue
    for folder in sorted(out.iterdir()):
        module = fixed_shared if "shared" in folder.name else fixed
        for label, args in (("wrong", ()), ("fixed", (f"--module={module}",))) + ((("wrong --interpret", ("--interpret",)),) if backend == "interpret" and ("race" in folder.name or "oob" in folder.name) else ()):
            rc, text, bound, cannot, took = repro(folder, *args)
            print(f"[{backend}] {folder.name[:34]:34s} {label:18s} rc={rc} ({took:.0f}s) {text}", flush=True)
            if bound:
                print(f"      {bound}")
            for c in cannot:
                print(f"      {c[:200]}")
