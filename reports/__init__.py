"""Portability reports: read run files (JSON written by the suite), render Markdown/HTML/JSON, compare two runs.

This package reads result files only. It never imports kernels, suite, triton or torch, so a
report can be built on a laptop from files copied off the runners: `python -m reports --help`.
"""
