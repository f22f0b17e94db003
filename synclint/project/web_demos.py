"""Whether a module is a web demo: a Gradio or Streamlit app.

``gradio_app.py`` (4D-Humans), ``app.py`` (T2I-Adapter), ``scripts/streamlit/*.py``
(Stability AI's Stable Diffusion) build a page that runs the model once per request a
person makes: a demo of the model, not the program's training or inference steps, like
the ``demo/`` folders :func:`synclint.project.hotness.path_context` knows by their names.
A loop over a ``DataLoader`` in such an app's callback (4D-Humans' ``infer``, over the
people detected in one uploaded image) is no step either. In session 23's blind round the
judges found the 5 findings drawn from 4D-Humans' ``gradio_app.py`` FALSE as demo code.

Only an import the module runs when it is imported counts: one at its top level or in a
top-level block (``try: import gradio as gr``). A training script that imports Gradio
inside a function, to show a page when asked (``if args.demo: launch_demo()``), is still
the program, and so is one that imports it at its top level but trains: a loop over
batches that runs a backward pass (:func:`synclint.project.summary.trains_on_batches`,
asked before this module is).
"""

from __future__ import annotations

import ast

#: Libraries that build a web page around a model.
WEB_DEMO_LIBRARIES = ("gradio", "streamlit")


def web_demo_library(tree: ast.Module) -> str | None:
    """The web demo library the module imports at its top level, or None."""
    for statement in _top_level(tree.body):
        if isinstance(statement, ast.Import):
            names = [alias.name for alias in statement.names]
        elif isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            names = [statement.module]
        else:
            continue
        for name in names:
            top = name.split(".", 1)[0]
            if top in WEB_DEMO_LIBRARIES:
                return top
    return None


def _top_level(statements: list[ast.stmt]):
    """The statements that run when the module is imported: its body, and the blocks of
    its top-level ``if``/``try`` statements (not the ``__main__`` guard's body alone: that
    one runs only as a script, which is how a demo app runs too)."""
    for statement in statements:
        yield statement
        if isinstance(statement, ast.If):
            yield from _top_level([*statement.body, *statement.orelse])
        elif isinstance(statement, (ast.Try, getattr(ast, "TryStar", ast.Try))):
            handlers = [line for handler in statement.handlers for line in handler.body]
            yield from _top_level([*statement.body, *handlers, *statement.orelse, *statement.finalbody])
