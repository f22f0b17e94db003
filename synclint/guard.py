"""Refuse sources that would crash or stall libcst's parser, before it sees them.

libcst's native parser overflows its stack (a segfault, which no ``except``
can catch) at around 1,500 nested brackets or 10,000 nested unary operators or
lambdas, and slows down quadratically on very deep operator chains. CPython's
own parser has limits well below those (200 nested brackets, 100 indentation
levels, a recursion limit while building the AST), so a source that trips
them is reported as SL000 instead of being handed to libcst. Ordinary syntax
errors are left to libcst, which may accept newer syntax than this Python.
"""

from __future__ import annotations

import ast
import warnings

_TOO_DEEP_MESSAGES = ("too many nested", "too many levels of indentation", "too complex")


# The last source the guard parsed and its stdlib tree: positions need the same
# tree for files with findings, and parsing twice costs ~5% of a cold run.
_last: tuple[str, ast.Module] | None = None


def too_deep(source: str) -> str | None:
    """Why ``source`` is too deeply nested to parse safely, or None."""
    global _last
    _last = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = compile(source, "<guard>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        _last = (source, tree)
    except SyntaxError as error:
        message = str(error.msg)
        if any(text in message for text in _TOO_DEEP_MESSAGES):
            return message
    except (RecursionError, MemoryError) as error:
        return f"nested too deeply ({type(error).__name__})"
    except ValueError:  # null bytes: libcst reports its own error
        return None
    return None


def stdlib_tree(source: str) -> ast.Module:
    """``ast.parse(source)``, reusing the guard's tree when it checked this very string."""
    if _last is not None and _last[0] is source:
        return _last[1]
    return ast.parse(source)
