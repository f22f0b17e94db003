"""Top-level functions defined again before any call (synclint.project.redefined)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from synclint.project.redefined import redefined_functions


def _dead(source: str) -> list[tuple[int, int]]:
    return [(first, last) for first, last, _why in redefined_functions(ast.parse(textwrap.dedent(source)).body)]


def test_the_first_of_two_definitions_is_dead():
    assert _dead("def f():\n    return 1\n\ndef f():\n    return 2\n") == [(1, 2)]
    assert _dead("def f():\n    pass\nf = other\n") == [(1, 2)]
    assert _dead("def f():\n    pass\nclass f:\n    pass\n") == [(1, 2)]
    assert _dead("def f():\n    pass\nfrom m import f\n") == [(1, 2)]
    # Reads inside functions defined between run later, and see the last binding.
    assert _dead("def f():\n    pass\ndef g():\n    return f()\ndef f():\n    pass\n") == [(1, 2)]
    # A call at import time of a function that does not read it.
    assert _dead("def f():\n    pass\ndef g():\n    return 1\ng()\ndef f():\n    pass\n") == [(1, 2)]


@pytest.mark.parametrize("source", [
    "def f():\n    pass\nf()\ndef f():\n    pass\n",  # called at import time
    "def f():\n    pass\ng = f\ndef f():\n    pass\n",
    "def f():\n    pass\n@f\ndef g():\n    pass\ndef f():\n    pass\n",  # a decorator runs at import
    "def f():\n    pass\ndef g(key=f):\n    pass\ndef f():\n    pass\n",  # a default too
    "def f():\n    pass\nclass A:\n    m = staticmethod(f)\ndef f():\n    pass\n",  # a class body runs now
    "def f():\n    pass\n__all__ = ['f']\ndef f():\n    pass\n",
    "def f():\n    pass\nf = wrap(f)\n",  # rebound from itself
    "@overload\ndef f(x: int) -> int: ...\n@overload\ndef f(x: str) -> str: ...\ndef f(x):\n    return x\n",
    "if cond:\n    def f():\n        pass\nelse:\n    def f():\n        pass\n",
    "try:\n    from fast import f\nexcept ImportError:\n    def f():\n        pass\n",
    "def f():\n    pass\nif cond:\n    def f():\n        pass\n",  # maybe rebound: the first may run
    "def f():\n    pass\n",
    # A notebook exported as a script: train() runs now, and calls the first loss_fn.
    "def f():\n    pass\ndef train():\n    return f()\ntrain()\ndef f():\n    pass\n",
    # ... or through another of the module's functions, or a class's __init__.
    "def f():\n    pass\ndef g():\n    return f()\ndef h():\n    g()\nh()\ndef f():\n    pass\n",
    "def f():\n    pass\nclass A:\n    def __init__(self):\n        f()\na = A()\ndef f():\n    pass\n",
    "def f():\n    pass\ndef g(x: f):\n    pass\ndef f():\n    pass\n",  # an annotation runs now
])
def test_definitions_that_may_still_run(source):
    assert _dead(source) == []
