"""The names an assignment or loop target binds."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst


def target_name_nodes(target: cst.BaseExpression) -> Iterator[cst.Name]:
    """The Name nodes an assignment or loop target binds (``x``, ``x, (y, *rest)``)."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from target_name_nodes(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from target_name_nodes(target.value)
