"""Properties checked on generated modules (shared by the test suite and benchmarks/fuzz.py)."""

from __future__ import annotations

import hypothesmith
import libcst as cst
from hypothesis import strategies as st

from synclint.engine import SourceError, check_source
from synclint.fixers.apply import fix_text
from synclint.rules import ALL_RULES

_EXAMPLES = [src for rule in ALL_RULES for src in rule.VALID] + [
    example.code for rule in ALL_RULES for example in rule.INVALID
]


def modules() -> st.SearchStrategy[str]:
    """Generated Python modules, some of them spliced with rule examples."""
    generated = st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node())
    spliced = st.tuples(st.lists(st.sampled_from(_EXAMPLES), max_size=3), generated).map(
        lambda parts: "".join(parts[0]) + parts[1]
    )
    return st.one_of(generated, spliced)


def check_never_raises_and_fix_is_sound(source: str) -> None:
    """check never raises; fix output parses and fixing it again changes nothing."""
    check_source(source, "generated.py")  # must not raise
    try:
        fixed, _ = fix_text(source, unsafe=True)
    except SourceError:
        return  # refusing to fix unparsable input is fine
    cst.parse_module(fixed)
    again, _ = fix_text(fixed, unsafe=True)
    assert again == fixed, "fix is not idempotent"
