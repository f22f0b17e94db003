"""Recognising data-loader iteration (``for batch in train_loader``) syntactically."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

import libcst as cst

from synclint.analysis.imports import callee_name
from synclint.project.summary import LOADER_NAME as _LOADER_NAME  # one definition for both layers
from synclint.traversal import walk


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


#: torch's data loader, by its qualified names.
DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
#: Subclasses of torch's loader that hand ``pin_memory`` and ``num_workers`` to it unchanged,
#: so its settings mean what they mean for torch's: MONAI's (a default ``collate_fn`` and
#: ``worker_init_fn``, the auto3dseg templates' validation loaders) and PyG's (a ``Collater``
#: of graphs; ``Batch.pin_memory`` pins every field). Not MONAI's ``ThreadDataLoader``,
#: whose thread may run device transforms. SL402 keeps to torch's own loader.
HOST_SETTING_LOADERS = DATALOADERS | frozenset({
    "monai.data.DataLoader",
    "monai.data.dataloader.DataLoader",
    "torch_geometric.loader.DataLoader",
    "torch_geometric.loader.dataloader.DataLoader",
    "torch_geometric.data.DataLoader",
})


def yields_host_batches(
    node: cst.BaseExpression,
    qualify: Callable[[cst.BaseExpression], str | None],
    forked: Callable[[], bool] = lambda: True,
) -> bool:
    """``DataLoader(ds, pin_memory=True)`` or ``DataLoader(ds, num_workers=8)``: a loader
    (torch's, or a subclass of :data:`HOST_SETTING_LOADERS`) whose settings rule out device
    tensors in its batches. Only CPU memory can be pinned
    (ATen's ``pin_memory`` raises on any other tensor); and worker processes forked from a
    process that uses CUDA cannot initialise it again, so a dataset or ``collate_fn`` of a
    loader with workers builds host tensors (unless it is handed a
    ``multiprocessing_context``, or ``forked()`` says the file sets another start method,
    which may start them otherwise: asked only of such a loader, as it reads the file)."""
    if not isinstance(node, cst.Call) or qualify(node.func) not in HOST_SETTING_LOADERS:
        return False
    keywords = {arg.keyword.value: arg.value for arg in node.args if arg.keyword is not None}
    if _is_true(keywords.get("pin_memory")):
        return True
    if any(arg.star for arg in node.args) or "multiprocessing_context" in keywords:
        return False
    workers = keywords.get("num_workers")
    return isinstance(workers, cst.Integer) and int(workers.value, 0) > 0 and forked()


def _is_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


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


class _StartMethodScan(cst.CSTVisitor):
    """Whether a module calls ``set_start_method`` (of ``multiprocessing`` or torch's)."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = self.found or callee_name(node.func) == "set_start_method"
        return not self.found


def sets_a_start_method(module: cst.Module) -> bool:
    """``mp.set_start_method("spawn")``: the file's worker processes may start fresh, not
    forked (whatever method it names: a test of the argument would miss ``args.method``)."""
    scan = _StartMethodScan()
    walk(module, scan)  # read-only: ``module.visit`` would rebuild every node
    return scan.found
