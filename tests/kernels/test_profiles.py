"""Unit tests for hardware_profiles: shipped data against shared/PORTABILITY-FACTS.md, validation, detection."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import hardware_profiles as hp

PROFILE_DIR = Path(hp.__file__).parent / "profiles"
EXPECTED_KEYS = {"a100_40gb", "a100_80gb", "h100_sxm", "h200_sxm", "b200", "mi250x_gcd", "mi300x", "mi325x", "mi355x"}


def test_every_shipped_file_loads_with_its_stem_as_key():
    profiles = hp.load_all()
    assert set(profiles) == EXPECTED_KEYS
    assert {p.stem for p in PROFILE_DIR.glob("*.json")} == EXPECTED_KEYS
    for key, profile in profiles.items():
        assert profile.key == key
        assert Path(profile.path).name == f"{key}.json"
        assert profile.detected is False
        assert profile.family == profile.vendor


def test_shipped_files_are_two_space_indented_json():
    for path in PROFILE_DIR.glob("*.json"):
        text = path.read_text()
        assert text == json.dumps(json.loads(text), indent=2) + "\n", path


def test_targets_cover_the_compile_matrix_each_with_a_representative():
    assert hp.targets() == [("cuda", "sm_80", 32), ("cuda", "sm_90", 32), ("cuda", "sm_100", 32),
                            ("hip", "gfx90a", 64), ("hip", "gfx942", 64), ("hip", "gfx950", 64)]
    expected = {"sm_80": "a100_80gb", "sm_90": "h100_sxm", "sm_100": "b200",
                "gfx90a": "mi250x_gcd", "gfx942": "mi300x", "gfx950": "mi355x"}
    for backend, arch, warp in hp.targets():
        rep = hp.representative(arch)
        assert rep.key == expected[arch]
        assert (rep.arch, rep.warp_size) == (arch, warp)
        assert rep.vendor == ("nvidia" if backend == "cuda" else "amd")
        assert rep in hp.by_arch(arch)
    assert [p.key for p in hp.by_arch("gfx942")] == ["mi300x", "mi325x"]
    assert hp.by_arch("sm_89") == []


def test_get_by_key_and_by_arch_and_unknown_key_lists_keys():
    assert hp.get("h100_sxm").name == "H100 SXM5 80GB"
    assert hp.get("gfx942").key == "mi300x"
    with pytest.raises(KeyError, match="h100_sxm") as info:
        hp.get("h100")
    assert "mi355x" in str(info.value)
    with pytest.raises(KeyError):
        hp.representative("sm_89")


@pytest.mark.parametrize("key, sm, warp, bw, mem, l2, fp16", [
    ("a100_40gb", 108, 32, 1.555, 40, 40, 312),
    ("a100_80gb", 108, 32, 2.039, 80, 40, 312),
    ("h100_sxm", 132, 32, 3.35, 80, 50, 989.4),
    ("h200_sxm", 132, 32, 4.8, 141, 50, 989.4),
    ("b200", 148, 32, 8.0, 180, 126, 2250),
    ("mi250x_gcd", 110, 64, 1.64, 64, 8, 191.5),
    ("mi300x", 304, 64, 5.3, 192, 32, 1307.4),
    ("mi325x", 304, 64, 6.0, 256, 32, 1307.4),
    ("mi355x", 256, 64, 8.0, 288, 32, 2516.6),
])
def test_datasheet_figures_match_the_table_in_docs(key, sm, warp, bw, mem, l2, fp16):
    p = hp.get(key)
    assert (p.sm_count, p.warp_size, p.peak_bandwidth_tbs, p.memory_gb, p.l2_mb) == (sm, warp, bw, mem, l2)
    assert p.peak_tflops["fp16"] == p.peak_tflops["bf16"] == fp16
    assert set(p.peak_tflops) == {"fp32", "tf32", "fp16", "bf16", "fp8"}


def test_h100_spot_check():
    h100 = hp.get("h100_sxm")
    assert h100.sm_count == 132 and h100.peak_bandwidth_tbs == 3.35
    assert h100.peak_tflops == {"fp32": 66.9, "tf32": 494.7, "fp16": 989.4, "bf16": 989.4, "fp8": 1979.0}
    assert h100.shared_memory_per_block_bytes == 227 * 1024
    assert (h100.registers_per_sm, h100.max_registers_per_thread, h100.max_threads_per_sm) == (65536, 255, 2048)
    assert h100.fp32_dot_precision == "tf32" and h100.uncertain == ()


def test_mi300x_spot_check():
    mi300x = hp.get("mi300x")
    assert (mi300x.sm_count, mi300x.warp_size, mi300x.shared_memory_per_block_bytes) == (304, 64, 65536)
    assert mi300x.fp8_flavour == "fnuz" and mi300x.fp32_dot_precision == "xf32"
    assert (mi300x.vgprs_per_lane, mi300x.registers_per_sm, mi300x.llc_mb) == (512, None, 256)
    assert mi300x.peak_tflops["fp8"] == 2614.9


def test_per_arch_limits_and_dot_precision():
    assert hp.get("a100_40gb").shared_memory_per_block_bytes == 166912
    assert hp.get("b200").shared_memory_per_block_bytes == 232448
    assert hp.get("mi250x_gcd").shared_memory_per_block_bytes == 65536
    assert hp.get("mi355x").shared_memory_per_block_bytes == 163840
    precision = {p.arch: p.fp32_dot_precision for p in hp.load_all().values()}
    assert precision == {"sm_80": "tf32", "sm_90": "tf32", "sm_100": "tf32",
                         "gfx90a": "ieee", "gfx942": "xf32", "gfx950": "ieee"}


def test_uncertain_figures_are_marked():
    b200 = hp.get("b200")
    assert {"peak_tflops.fp32", "l2_mb"} <= set(b200.uncertain)
    assert b200.peak_tflops["fp32"] is None  # "~75-80 (?)" is a range, not a figure
    mi355x = hp.get("mi355x")
    assert "peak_tflops.tf32" in mi355x.uncertain and mi355x.peak_tflops["tf32"] is None
    for profile in hp.load_all().values():
        assert "default" in profile.sources


def test_fp8_flavours_and_dtype_gating():
    mi300x, h100, a100, mi250x, mi355x = (hp.get(k) for k in ("mi300x", "h100_sxm", "a100_80gb", "mi250x_gcd",
                                                               "mi355x"))
    assert mi300x.supports("fp8e4b8") and mi300x.supports("fp8e5b16")
    assert not mi300x.supports("fp8e4nv") and not mi300x.supports("fp8e5")
    assert h100.fp8_dtypes() == ("fp8e4nv", "fp8e5") and mi355x.fp8_dtypes() == ("fp8e4nv", "fp8e5")
    assert mi300x.fp8_dtypes() == ("fp8e4b8", "fp8e5b16") and hp.get("mi325x").fp8_flavour == "fnuz"
    for no_fp8 in (a100, hp.get("a100_40gb"), mi250x):
        assert no_fp8.fp8_dtypes() == () and no_fp8.fp8_flavour is None
        assert not any(no_fp8.supports(d) for d in ("fp8e4nv", "fp8e5", "fp8e4b8", "fp8e5b16"))
        assert no_fp8.peak_tflops["fp8"] is None
    assert a100.supports("bf16") and a100.supports("torch.bfloat16") and h100.supports("float8_e4m3fn")
    assert not mi300x.supports("torch.float8_e4m3fn") and mi300x.supports("float8_e4m3fnuz")
    assert all(p.supports("fp64") and p.supports("int32") for p in (a100, mi300x))
    with pytest.raises(ValueError, match="fp9"):
        h100.supports("fp9")


def test_to_record_is_json_serialisable():
    record = hp.get("mi300x").to_record()
    assert json.loads(json.dumps(record)) == record
    assert record["key"] == "mi300x" and record["dtypes"][-1] == "fp8e5b16" and record["detected"] is False
    assert record["peak_tflops"]["fp16"] == 1307.4 and "default" in record["sources"]


def test_interpreter_profile():
    p = hp.interpreter_profile()
    assert (p.arch, p.vendor, p.warp_size, p.sm_count, p.path) == ("interpreter", "interpret", 32, 1, "<builtin>")
    assert p.dtypes == ("fp32", "fp16", "bf16") and p.fp8_dtypes() == () and p.fp32_dot_precision == "ieee"
    assert p.supports("bf16") and not p.supports("fp8e4nv")
    assert p.peak_bandwidth_tbs is None and all(v is None for v in p.peak_tflops.values())
    json.dumps(p.to_record())


# --- malformed files -------------------------------------------------------------------------------------------------

def _write(tmp_path: Path, data: dict | str, name: str = "broken.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def _h100_data() -> dict:
    return json.loads((PROFILE_DIR / "h100_sxm.json").read_text())


def test_copy_of_a_shipped_file_loads_under_its_new_key(tmp_path):
    profile = hp.load_profile(_write(tmp_path, _h100_data(), "my_gpu.json"))
    assert profile.key == "my_gpu" and profile.sm_count == 132
    assert set(hp.load_all(tmp_path)) == {"my_gpu"}


def test_bad_json_names_the_file(tmp_path):
    path = _write(tmp_path, '{"name": "x",')
    with pytest.raises(hp.ProfileError) as info:
        hp.load_profile(path)
    assert str(path) in str(info.value)


def test_missing_file_names_the_file(tmp_path):
    with pytest.raises(hp.ProfileError, match="absent.json"):
        hp.load_profile(tmp_path / "absent.json")


def test_load_all_fails_on_a_bad_file(tmp_path):
    _write(tmp_path, _h100_data(), "good.json")
    bad = _write(tmp_path, "[]", "bad.json")
    with pytest.raises(hp.ProfileError) as info:
        hp.load_all(tmp_path)
    assert str(bad) in str(info.value)


_DELETE = object()


def _mutated(**changes: object) -> dict:
    data = _h100_data()
    for key, value in changes.items():
        if value is _DELETE:
            del data[key]
        else:
            data[key] = value
    return data


@pytest.mark.parametrize("changes, field", [
    ({"sm_count": _DELETE}, "sm_count"),
    ({"sources": _DELETE}, "sources"),
    ({"sm_count": "abc"}, "sm_count"),
    ({"sm_count": 0}, "sm_count"),
    ({"sm_count": 132.0}, "sm_count"),
    ({"sm_count": True}, "sm_count"),
    ({"warp_size": 48}, "warp_size"),
    ({"peak_bandwidth_tbs": "3.35"}, "peak_bandwidth_tbs"),
    ({"peak_tflops": {"fp32": 1.0}}, "peak_tflops"),
    ({"peak_tflops": {"fp32": 1, "tf32": 1, "fp16": 1, "bf16": "x", "fp8": None}}, "peak_tflops"),
    ({"device_names": "H100"}, "device_names"),
    ({"device_names": []}, "device_names"),
    ({"dtypes": ["fp32", "fp4"]}, "dtypes"),
    ({"dtypes": ["fp32", "fp32"]}, "dtypes"),
    ({"vendor": "intel"}, "vendor"),
    ({"family": "amd"}, "family"),
    ({"arch": "hopper"}, "arch"),
    ({"arch": "gfx942"}, "arch"),
    ({"fp8_flavour": "fnuz"}, "fp8_flavour"),
    ({"fp8_flavour": None}, "fp8_flavour"),
    ({"fp32_dot_precision": "fp32"}, "fp32_dot_precision"),
    ({"registers_per_sm": None}, "registers_per_sm"),
    ({"uncertain": ["sm_cnt"]}, "uncertain"),
    ({"sources": {"sm_count": "x"}}, "sources"),
    ({"notes": None}, "notes"),
    ({"sm_cnt": 132}, "sm_cnt"),
])
def test_malformed_profile_error_names_file_and_field(tmp_path, changes, field):
    path = _write(tmp_path, _mutated(**changes))
    with pytest.raises(hp.ProfileError) as info:
        hp.load_profile(path)
    message = str(info.value)
    assert str(path) in message
    assert f"'{field}'" in message


def test_wrong_type_message_shows_the_value(tmp_path):
    path = _write(tmp_path, _mutated(sm_count="abc"))
    with pytest.raises(hp.ProfileError) as info:
        hp.load_profile(path)
    assert str(info.value) == f"{path}: field 'sm_count' must be a positive integer, got 'abc'"


def test_duplicate_json_key_is_an_error(tmp_path):
    text = json.dumps(_h100_data(), indent=2).replace('"sm_count": 132', '"sm_count": 132, "sm_count": 114')
    path = _write(tmp_path, text)
    with pytest.raises(hp.ProfileError, match="sm_count") as info:
        hp.load_profile(path)
    assert str(path) in str(info.value)


# --- detection -------------------------------------------------------------------------------------------------------

def test_detect_exact_match_h100():
    profile, message = hp.detect("sm_90", "NVIDIA H100 80GB HBM3", 132, 32)
    assert profile.key == "h100_sxm" and message is None and profile.detected is False


def test_detect_exact_match_mi300x_with_gcn_arch_features():
    for arch in ("gfx942", "gfx942:sramecc+:xnack-"):
        profile, message = hp.detect(arch, "AMD Instinct MI300X", 304, 64)
        assert profile.key == "mi300x" and message is None


def test_detect_unknown_nvidia_part_builds_a_profile():
    profile, message = hp.detect("sm_90", "NVIDIA H100 PCIe", 114, 32)
    assert profile.detected is True and profile.key == "detected-sm_90"
    assert (profile.sm_count, profile.warp_size, profile.arch, profile.vendor) == (114, 32, "sm_90", "nvidia")
    assert profile.fp8_flavour == "ocp" and profile.fp8_dtypes() == ("fp8e4nv", "fp8e5")
    assert profile.fp32_dot_precision == "tf32" and profile.name == "NVIDIA H100 PCIe"
    assert profile.peak_bandwidth_tbs is None and all(v is None for v in profile.peak_tflops.values())
    assert profile.shared_memory_per_block_bytes == 232448  # arch limit, assumed from the sm_90 profile
    assert "peak_bandwidth_tbs" in profile.uncertain
    assert message and "NVIDIA H100 PCIe" in message and "peak_bandwidth_tbs" in message
    assert "goes on" in message
    json.dumps(profile.to_record())


def test_detect_same_name_but_other_sm_count_is_not_a_match():
    profile, message = hp.detect("sm_90", "NVIDIA H100 80GB HBM3", 114, 32)
    assert profile.detected and message


def test_detect_unknown_amd_part_keeps_fnuz():
    profile, message = hp.detect("gfx942", "AMD Instinct MI308X", 80, 64)
    assert profile.detected and profile.key == "detected-gfx942" and profile.sm_count == 80
    assert profile.fp8_flavour == "fnuz" and profile.supports("fp8e4b8") and not profile.supports("fp8e4nv")
    assert profile.fp32_dot_precision == "xf32" and profile.shared_memory_per_block_bytes == 65536
    assert message and "MI308X" in message


def test_detect_reported_shared_memory_wins():
    profile, _ = hp.detect("sm_90", "NVIDIA H100 PCIe", 114, 32, shared_memory_per_block_bytes=200000)
    assert profile.shared_memory_per_block_bytes == 200000
    assert "shared_memory_per_block_bytes" not in profile.uncertain


@pytest.mark.parametrize("arch, name, warp, bf16, flavour, precision, guess", [
    ("sm_80", "NVIDIA A100 80GB PCIe", 32, True, None, "tf32", False),
    ("sm_86", "NVIDIA RTX A6000", 32, True, None, "tf32", False),
    ("sm_89", "NVIDIA L40S", 32, True, "ocp", "tf32", False),
    ("sm_90a", "NVIDIA GH200 480GB", 32, True, "ocp", "tf32", False),
    ("sm_100", "NVIDIA B100", 32, True, "ocp", "tf32", False),
    ("sm_120", "NVIDIA RTX PRO 6000", 32, True, "ocp", "tf32", False),
    ("sm_75", "Tesla T4", 32, False, None, "ieee", False),
    ("gfx90a", "AMD Instinct MI210", 64, True, None, "ieee", False),
    ("gfx950", "AMD Instinct MI350X", 64, True, "ocp", "ieee", False),
    ("gfx1100", "AMD Radeon RX 7900 XTX", 32, True, None, "ieee", True),
    ("gfx1201", "AMD Radeon RX 9070 XT", 32, True, None, "ieee", True),
])
def test_detect_capability_rules_by_arch(arch, name, warp, bf16, flavour, precision, guess):
    profile, message = hp.detect(arch, name, 7, warp)
    assert profile.detected and message
    assert profile.supports("bf16") is bf16
    assert profile.fp8_flavour == flavour
    assert profile.fp8_dtypes() == hp.FP8_BY_FLAVOUR.get(flavour, ())
    assert profile.fp32_dot_precision == precision
    assert ("guess" in profile.notes.lower()) is guess
    assert profile.vendor == ("nvidia" if arch.startswith("sm_") else "amd")


def test_detect_rejects_an_unknown_arch():
    with pytest.raises(ValueError, match="xe_hpc"):
        hp.detect("xe_hpc", "Intel Data Center GPU Max", 128, 32)


def test_package_imports_no_gpu_or_test_stack():
    code = ("import sys, hardware_profiles; hardware_profiles.load_all(); "
            "bad = [m for m in ('torch', 'triton', 'pytest', 'hypothesis') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], cwd=PROFILE_DIR.parent.parent, capture_output=True,
                            text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_stray_or_bad_shipped_file_is_left_out_and_named(tmp_path, monkeypatch):
    """One bad file in profiles/ must not stop every GPU run: it is left out, named, and only a lookup that needs
    it fails (naming it)."""
    from hardware_profiles import loader

    for path in PROFILE_DIR.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "notes.json").write_text("{not json")
    (tmp_path / "mi300x.json").write_text(json.dumps({**json.loads((PROFILE_DIR / "mi300x.json").read_text()),
                                                      "sm_count": -1}))
    monkeypatch.setattr(loader, "PROFILES_DIR", tmp_path)
    monkeypatch.setattr(loader, "_DEFAULT", None)
    monkeypatch.setattr(loader, "_SKIPPED", {})
    profiles = loader.load_all()
    assert "notes" not in profiles and "mi300x" not in profiles and "h100_sxm" in profiles
    skipped = loader.skipped()
    assert set(map(Path, skipped)) == {tmp_path / "notes.json", tmp_path / "mi300x.json"}
    assert "sm_count" in skipped[str(tmp_path / "mi300x.json")]
    assert loader.representative("sm_90").key == "h100_sxm"
    with pytest.raises(hp.ProfileError, match="gfx942 profile cannot be used: .*mi300x.json.*sm_count"):
        loader.representative("gfx942")
    profile, note = loader.detect("sm_90", "NVIDIA H100 80GB HBM3", 132, 32)
    assert profile.key == "h100_sxm" and note is None
