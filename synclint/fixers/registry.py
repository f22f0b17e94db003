"""Imports every fixer module so their ``@fixer`` registrations run."""

from synclint.fixers import non_blocking, pin_memory  # noqa: F401
