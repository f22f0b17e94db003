"""How the code cells of a notebook are joined into one module: :mod:`synclint.notebook`
writes the marker before each cell, and the project layer reads it to know the module runs
in a kernel (whose plots never block: see :mod:`synclint.project.interactive`)."""

from __future__ import annotations

#: The line before each cell of a notebook's virtual module (its 1-based cell number).
CELL_MARKER = "# %% synclint-cell {}"


def is_notebook_module(source: str) -> bool:
    """``source`` is the virtual module of a notebook's code cells."""
    return source.startswith(CELL_MARKER.partition("{")[0])
