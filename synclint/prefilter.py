"""A text test that lets files no rule can match skip the libcst parse.

Each rule class declares ``TOKENS``: substrings at least one of which appears
in any file where the rule can report (``None``: the rule must always parse).
Rules that only fire on a value known to be a tensor use
:data:`TENSOR_EVIDENCE`, every spelling from which the analysis can learn that
something is a tensor: ``torch`` (imports, annotations), ``Tensor``,
``forward`` (its parameters are taken as tensors), and the tensor-only methods
and attributes. Method names are matched with their dot (``.float``), in a
copy of the text where a dot is glued to what follows it, so that
``x . float()`` or a dot at the end of a line still count.

A skipped file is still compiled with the stdlib parser (about ten times
faster than libcst): a file with a syntax error goes on to the full check and
gets its SL000.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable

from synclint.analysis.kinds import TENSOR_ONLY_METHODS

# kept in step with synclint.analysis.evidence._TENSOR_ONLY_ATTRIBUTES and the
# self-attribute collector in synclint.analysis.flow
_TENSOR_ONLY_ATTRIBUTES = ("is_cuda", "grad", "requires_grad", "grad_fn", "register_buffer", "register_parameter")

TENSOR_EVIDENCE: frozenset[str] = frozenset(
    {"torch", "Tensor", "forward"}
    | {f".{name}" for name in TENSOR_ONLY_METHODS}
    | {f".{name}" for name in _TENSOR_ONLY_ATTRIBUTES}
)

# Whitespace, line continuations and comments between a dot and the name after it.
_SPACE_AFTER_DOT = re.compile(r"\.(?:[ \t\f\r\n\\]|#[^\n]*)+")


def rule_tokens(rules: Iterable[type]) -> frozenset[str] | None:
    """The union of the rules' tokens; None when some rule always needs the parse."""
    tokens: set[str] = set()
    for rule in rules:
        declared = getattr(rule, "TOKENS", None)
        if declared is None:
            return None
        tokens |= declared
    return frozenset(tokens)


def mentions_any(text: str, tokens: Iterable[str]) -> bool:
    if "." in text:
        text = _SPACE_AFTER_DOT.sub(".", text)
    return any(token in text for token in tokens)


def can_skip(text: str, rules: Iterable[type]) -> bool:
    """True when no rule in ``rules`` can report on ``text`` and it is valid Python."""
    tokens = rule_tokens(rules)
    if tokens is None or mentions_any(text, tokens):
        return False
    try:
        with warnings.catch_warnings():  # invalid escapes etc. are not ours to report
            warnings.simplefilter("ignore")
            compile(text, "<prefilter>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False  # let the full check report it
    return True
