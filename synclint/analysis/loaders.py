"""Recognising data-loader iteration (``for batch in train_loader``) syntactically."""

from __future__ import annotations

import re
from collections.abc import Collection

import libcst as cst

from synclint.project.summary import LOADER_NAME as _LOADER_NAME  # one definition for both layers


def is_loader(node: cst.BaseExpression, known: Collection[str] = ()) -> bool:
    """``loader``, ``self.train_loader``, ``enumerate(loader)``, ``tqdm(loader)``, ``iter(dl)``,
    or a name in ``known`` (``pbar = tqdm(enumerate(train_loader))``)."""
    if isinstance(node, cst.Name):
        return node.value in known or bool(_LOADER_NAME.search(node.value))
    if isinstance(node, cst.Attribute):
        return bool(_LOADER_NAME.search(node.attr.value))
    if isinstance(node, cst.Call):
        # ``tqdm(loader)``, ``enumerate(loader)``, ``self.log_progress(stage, loader)``: as
        # the project index reads loops over batches (``summary.is_batch_iterable``).
        return any(is_loader(arg.value, known) for arg in node.args[:2]) or is_loader(node.func, known)
    return False


#: Names of per-sample collections: ``targets``, ``gt_boxes``, ``targets_list``, ``batch``.
SAMPLE_NAME = re.compile(
    r"(^|_)(targets|boxes|labels|gts|annotations|annots|samples|images|imgs|masks|preds|"
    r"predictions|instances|proposals|detections|dets|batch|batched_inputs)(_list|_lst)?$",
    re.I,
)


def is_sample_collection(node: cst.BaseExpression) -> bool:
    """A per-sample collection by name (``targets``, ``gt_boxes``, ``batch``)."""
    from synclint.analysis.imports import dotted_name

    name = (dotted_name(node) or "").rsplit(".", 1)[-1]
    return bool(SAMPLE_NAME.search(name))
