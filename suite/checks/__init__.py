"""Checking one case: the config it runs (the autotune cache), inputs, launch, memory checking, the interpreter's
gaps, the tolerance rule, reach and lints, Hypothesis strategies. Imports workers and session (docs/design.md)."""
