"""Hardware profiles: one JSON file per GPU in profiles/ with datasheet figures, limits, capabilities and sources,
and the per-arch autotune caches in autotune/.

Every figure comes with its source (the datasheet table is in docs/hazards.md, "Hardware figures the profiles
cite"); fields that are uncertain are listed in a profile's ``uncertain``. The loader lives in ``hardware_profiles.loader``.
"""

from hardware_profiles.loader import (
    DTYPES,
    FP8_BY_FLAVOUR,
    PEAK_KEYS,
    PROFILES_DIR,
    REPRESENTATIVES,
    Profile,
    ProfileError,
    by_arch,
    detect,
    get,
    interpreter_profile,
    load_all,
    load_profile,
    representative,
    skipped,
    targets,
)

__all__ = ["DTYPES", "FP8_BY_FLAVOUR", "PEAK_KEYS", "PROFILES_DIR", "REPRESENTATIVES", "Profile", "ProfileError",
           "by_arch", "detect", "get", "interpreter_profile", "load_all", "load_profile", "representative", "skipped",
           "targets"]
