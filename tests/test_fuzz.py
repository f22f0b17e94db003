"""A bounded hypothesis run: check never raises, fixes parse and are idempotent.

benchmarks/fuzz.py runs the same property on many more examples.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from tests.fuzz_properties import check_never_raises_and_fix_is_sound, modules


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(modules())
def test_generated_modules(source):
    check_never_raises_and_fix_is_sound(source)
