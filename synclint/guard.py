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


def guarded_tree(source: str) -> tuple[ast.Module | None, str | None]:
    """CPython's tree of ``source`` and why it is too deep to parse (one of them, or neither).

    Neither: CPython rejects the source for another reason (libcst, which may
    accept newer syntax, gets to decide).
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(source, "<guard>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True), None
    except SyntaxError as error:
        message = str(error.msg)
        if any(text in message for text in _TOO_DEEP_MESSAGES):
            return None, message
    except (RecursionError, MemoryError) as error:
        return None, f"nested too deeply ({type(error).__name__})"
    except ValueError:  # null bytes: libcst reports its own error
        pass
    return None, None
