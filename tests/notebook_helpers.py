"""Notebook documents for tests of how a project's notebooks are read."""

from __future__ import annotations

import json


def notebook_of(*sources: str) -> str:
    """An ``.ipynb`` document with one code cell per source, in order."""
    cells = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
              "source": source.splitlines(keepends=True)} for source in sources]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
