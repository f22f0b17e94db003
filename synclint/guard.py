"""Refuse sources that would crash or stall libcst's parser, before it sees them.

libcst's native parser overflows its stack (a segfault, which no ``except``
can catch) at around 1,500 nested brackets or 10,000 nested unary operators or
lambdas, and slows down quadratically on very deep operator chains. CPython's
own parser has limits well below those (200 nested brackets, 100 indentation
levels, a recursion limit while building the AST), so a source that trips
them is reported as SL000 instead of being handed to libcst. Ordinary syntax
errors are left to libcst, which may accept newer syntax than this Python.

Two things must not weaken the guard:

* **The caller's recursion limit.** CPython 3.11 bounds the AST it builds by
  the interpreter's recursion limit, so a caller (or a library such as
  TorchInductor) that raised it would let a 10,000-term expression through to
  libcst. The guard compiles under a limit pinned to a fixed headroom above the
  current stack depth, whatever the caller set.
* **A parse that stops early.** When this Python rejects the source for an
  ordinary reason (syntax newer than this Python, such as a 3.12 f-string),
  CPython never reaches the deep part. A lexical scan (the tokenizer, which
  does not recurse) then measures the nesting itself.
"""

from __future__ import annotations

import ast
import io
import sys
import threading
import tokenize
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_TOO_DEEP_MESSAGES = ("too many nested", "too many levels of indentation", "too complex")

#: Stack headroom (Python frames) the guard's compile runs with: CPython's default
#: recursion limit, so what passes here is what passes in a default interpreter
#: (about 3,000 nested AST nodes on 3.11).
RECURSION_HEADROOM = 1000

# Limits of the lexical scan (used when CPython cannot parse the source at all);
# each is below what libcst and the analysis survive, and far above real code.
MAX_BRACKET_DEPTH = 200  # CPython's own limit
MAX_INDENT_DEPTH = 100  # CPython's own limit
MAX_OPERATOR_RUN = 1000  # operators in one chain (``a + b + ...``, ``- - - x``, ``a.b.c``)

_SEPARATORS = frozenset({",", ":", ";", "=", ":=", "->"}) | frozenset(
    op + "=" for op in ("+", "-", "*", "/", "//", "%", "@", "&", "|", "^", ">>", "<<", "**")
)
_OPENING, _CLOSING = frozenset("([{"), frozenset(")]}")
_OPERATOR_KEYWORDS = frozenset({"not", "and", "or", "in", "is", "if", "else", "await", "lambda"})

_limit_lock = threading.Lock()


def guarded_tree(source: str) -> tuple[ast.Module | None, str | None]:
    """CPython's tree of ``source`` and why it is too deep to parse (one of them, or neither).

    Neither: CPython rejects the source for another reason (libcst, which may
    accept newer syntax, gets to decide) and the lexical scan found no deep nesting.
    """
    try:
        with warnings.catch_warnings(), _pinned_recursion_limit():
            warnings.simplefilter("ignore")
            return compile(source, "<guard>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True), None
    except SyntaxError as error:
        message = str(error.msg)
        if any(text in message for text in _TOO_DEEP_MESSAGES):
            return None, message
    except (RecursionError, MemoryError) as error:
        return None, f"nested too deeply ({type(error).__name__})"
    except ValueError:  # null bytes: libcst reports its own error
        return None, None
    return None, lexical_nesting_problem(source)


@contextmanager
def _pinned_recursion_limit() -> Iterator[None]:
    """Run the body under ``RECURSION_HEADROOM`` frames above the current depth."""
    with _limit_lock:
        saved = sys.getrecursionlimit()
        sys.setrecursionlimit(_stack_depth() + RECURSION_HEADROOM)
        try:
            yield
        finally:
            sys.setrecursionlimit(saved)


def _stack_depth() -> int:
    depth = 0
    frame = sys._getframe()
    while frame is not None:
        depth += 1
        frame = frame.f_back
    return depth


def lexical_nesting_problem(source: str) -> str | None:
    """Why ``source`` nests too deeply for libcst, judged from its tokens alone (or None).

    Counts, without parsing: bracket depth, indentation depth, and the longest
    chain of operators (unary, binary, attribute access) between two separators
    at one bracket level. Tokenizer errors end the scan: what was scanned counts.
    """
    brackets = indents = 0
    chains = [0]  # operators since the last separator, per open bracket level
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            kind, text = token.type, token.string
            if kind == tokenize.INDENT:
                indents += 1
                if indents > MAX_INDENT_DEPTH:
                    return "too many levels of indentation (lexical scan)"
                continue
            if kind == tokenize.DEDENT:
                indents -= 1
                continue
            if kind in (tokenize.NEWLINE, tokenize.NL) and brackets == 0:
                chains = [0]
                continue
            if kind == tokenize.OP:
                if text in _OPENING:
                    brackets += 1
                    if brackets > MAX_BRACKET_DEPTH:
                        return "too many nested parentheses (lexical scan)"
                    chains[-1] += 1  # a call or subscript continues the chain
                    chains.append(0)
                    continue
                if text in _CLOSING:
                    brackets = max(0, brackets - 1)
                    if len(chains) > 1:
                        chains.pop()
                    continue
                if text in _SEPARATORS:
                    chains[-1] = 0
                    continue
            elif not (kind == tokenize.NAME and text in _OPERATOR_KEYWORDS):
                continue
            chains[-1] += 1
            if chains[-1] > MAX_OPERATOR_RUN:
                return "operator chain too long (lexical scan)"
    except (tokenize.TokenError, IndentationError, SyntaxError) as error:
        # Python 3.12's tokenizer (CPython's own) stops at its nesting limits
        # before the counts above pass them: its message says so.
        message = str(error.args[0]) if error.args else ""
        if any(text in message for text in _TOO_DEEP_MESSAGES):
            return f"{message} (lexical scan)"
    return None

