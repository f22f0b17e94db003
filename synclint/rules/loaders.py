"""Recognising data-loader iteration (``for batch in train_loader``) syntactically."""

from __future__ import annotations

import re

import libcst as cst

_LOADER_NAME = re.compile(r"(loader|^dl$|_dl$|^batches$)", re.I)


def is_loader(node: cst.BaseExpression) -> bool:
    """``loader``, ``self.train_loader``, ``enumerate(loader)``, ``tqdm(loader)``, ``iter(dl)``."""
    if isinstance(node, cst.Name):
        return bool(_LOADER_NAME.search(node.value))
    if isinstance(node, cst.Attribute):
        return bool(_LOADER_NAME.search(node.attr.value))
    if isinstance(node, cst.Call):
        return any(is_loader(arg.value) for arg in node.args[:1]) or is_loader(node.func)
    return False
