"""Work beyond checking a case: benchmarks, the compile matrix, registers as loaded, the torch-build check. Imports
checks, workers and session (docs/design.md, "The house")."""
