"""Shared Triton kernels, each with its spec. Knows nothing of pytest or Hypothesis."""
