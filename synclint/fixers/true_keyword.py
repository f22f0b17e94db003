"""Safe fixes that pass one keyword as ``True``: SL401 ``non_blocking=True`` on a
loader batch's host-to-device copy, SL402 ``pin_memory=True`` on a ``DataLoader``.

Preconditions (proven, else no fix and the finding says why):

* SL401: the receiver is a ``torch.Tensor`` by the analysis (a torch result, a
  ``Tensor`` annotation, a tensor-only use). Loader batches are often custom
  objects (DETR's ``NestedTensor.to(device)`` takes no ``non_blocking``: adding it
  is a ``TypeError`` at the first batch), so an unknown receiver gets no fix.
* SL401: ``non_blocking`` is not already passed positionally:
  ``Tensor.to(device, dtype, non_blocking)`` / ``.to(dtype, non_blocking)`` /
  ``.cuda(device, non_blocking)``. ``.to`` may have one positional argument, or two
  when the second is a ``torch`` dtype; ``.cuda`` at most one.
* both: an explicit ``non_blocking=False`` / ``pin_memory=False`` is the author's
  choice and is never flipped; ``*args`` / ``**kwargs`` may already pass the
  keyword (a second one is a ``TypeError``).
* SL402: at most seven positional arguments (``pin_memory`` is the eighth
  positional parameter of ``DataLoader``), and the dataset is not a tensor that
  may live on a device (``DataLoader(train_idx)`` with a CUDA ``train_idx`` would
  make the pinning thread raise: only dense CPU tensors can be pinned).
"""

from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword
from synclint.fixers import fixer
from synclint.fixers.base import Declined, FixProposal
from synclint.fixers.keywords import set_keyword
from synclint.fixers.proofs import is_dtype, is_tensor, positional_values


def _pass_true(node: cst.Call, name: str) -> FixProposal | Declined | None:
    if any(a.star for a in node.args):
        return Declined(f"`*args` / `**kwargs` may already pass `{name}`")
    existing = keyword(node, name)
    if existing is not None:
        return Declined(f"an explicit `{name}=...` is kept as written")
    return FixProposal("safe", f"Pass `{name}=True`", {node: set_keyword(node, name, cst.Name("True"))})


@fixer("SL401")
def propose_non_blocking(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
        return None
    if not is_tensor(rule, node.func.value):
        return Declined("the receiver is not known to be a torch.Tensor (a custom `.to` may not accept `non_blocking`)")
    positional = positional_values(node)
    method = node.func.attr.value
    if method == "to" and not (len(positional) <= 1 or (len(positional) == 2 and is_dtype(rule, positional[1]))):
        return Declined("`non_blocking` may already be passed positionally")
    if method == "cuda" and len(positional) > 1:
        return Declined("`non_blocking` is already passed positionally")
    return _pass_true(node, "non_blocking")


@fixer("SL402")
def propose_pin_memory(rule, node: cst.CSTNode) -> FixProposal | Declined | None:
    if not isinstance(node, cst.Call):
        return None
    positional = positional_values(node)
    if len(positional) >= 8:
        return Declined("`pin_memory` is already passed positionally")
    dataset = positional[0] if positional else (keyword(node, "dataset").value if keyword(node, "dataset") else None)
    if dataset is not None and is_tensor(rule, dataset) and not rule.context.on_host(dataset):
        return Declined("the dataset is a tensor that may live on the device (pinning it would raise)")
    return _pass_true(node, "pin_memory")
