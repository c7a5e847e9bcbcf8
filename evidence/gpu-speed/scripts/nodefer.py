"""Diagnostics only (not shipped): the controller builds its context (imports torch) before its workers start, as
it did before suite/context.py's deferral; for an A/B in one call."""
from suite import context

context.defers = lambda config: False
