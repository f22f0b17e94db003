from __future__ import annotations

import libcst as cst

from synclint.analysis.kinds import Kind
from synclint.rules.base import Invalid, Rule
from synclint.analysis.loaders import is_sample_collection
from synclint.rules.matching import is_host_transfer, root_name, target_names
from synclint.traversal import walk

class PerSampleTransfer(Rule):
    """Flags `.to(device)` / `.cuda()` applied element by element to a list of tensors.

    ## What it does
    Finds host-to-device copies inside comprehensions or loops that walk a
    list of per-sample tensors (`[t.to(device) for t in targets]`, and the
    fields of each such sample: `{k: v.to(device) for k, v in t.items()} for t
    in targets`), and recursive helpers that move a nested structure one tensor
    at a time. The fields of a batch's dictionary (`for k, v in
    targets.items()`, each a whole batch's tensor) are not samples.

    ## Why is this bad?
    Every element is a separate small copy with its own launch and, from
    pageable memory, its own synchronisation. In the seed detection model,
    copying per-image boxes took 10x longer than copying one padded tensor.

    ## Example
    ```python
    targets = [t.to(device, non_blocking=True) for t in targets]
    ```

    ## Use instead
    Pad the per-sample tensors in `collate_fn` into one `(B, N, ...)` tensor
    (pinned by the loader) and copy it once:
    ```python
    targets = padded_targets.to(device, non_blocking=True)
    ```

    ## Fix safety
    No automatic fix: the padding belongs in the data pipeline.
    """

    code = "SL302"
    name = "per-sample-transfer"
    TOKENS = frozenset({".to", ".cuda"})  # see synclint.prefilter

    VALID = (
        "import torch\nx = batch.to('cuda')\n",
        "import torch\nys = [t.to('cpu') for t in ts]\n",
        "import torch\nmodels = [m for m in ms]\n",
        "import torch\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        "import torch\nys = [f(t) for t in ts]\n",
        "import torch\nfor epoch in range(3):\n    model.to(device)\n",
        "import torch\npbar = tqdm(enumerate(train_loader))\nfor i, (imgs, targets) in pbar:\n"
        "    imgs = imgs.to(device, non_blocking=True)\n",
        "import torch\ndef to(self, device):\n    for k, v in self._fields.items():\n        v = v.to(device)\n",
        "import torch\nres = [{k: v.to(cpu_device) for k, v in t.items()} for t in outputs]\n",
        # The fields of a batch's dictionary, each a whole batch's tensor (pvcnn's train.py).
        "import torch\nfor inputs, targets in loader:\n    for k, v in targets.items():\n"
        "        targets[k] = v.to(device, non_blocking=True)\n",
    )
    INVALID = (
        Invalid("import torch\nys = [t.to(device) for t in targets]\n", 2, 7),
        Invalid("import torch\nys = [t.cuda() for t in gt_boxes]\n", 2, 7),
        Invalid("import torch\nts = [{k: v.to(device) for k, v in t.items()} for t in targets]\n", 2, 11),
        Invalid("import torch\nfor t in targets:\n    out.append(t.to(device))\n", 3, 16),
        Invalid("import torch\nys = tuple(b[1].to(d, non_blocking=True) for b in batch)\n", 2, 12),
        Invalid(
            "import torch\ndef data_to_device(data, device):\n    if isinstance(data, (list, tuple)):\n"
            "        return type(data)(data_to_device(v, device) for v in data)\n"
            "    return data.to(device=device, non_blocking=True)\n",
            5, 12,
        ),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._element_names: list[set[str]] = []
        # Per enclosing function: the node, and (computed on the first transfer in
        # it, since most functions have none) whether it maps itself over a sequence.
        self._functions: list[list] = []

    # Per-element targets of comprehensions and loops (not of loops over a loader:
    # those elements are whole batches).
    def _enter_comprehension(self, node) -> None:
        names: set[str] = set()
        clause = node.for_in
        while clause is not None:
            if self._per_sample(clause.iter, names):
                names.update(target_names(clause.target))
            clause = clause.inner_for_in
        self._element_names.append(names)

    def _leave_comprehension(self, node) -> None:
        self._element_names.pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def visit_For(self, node: cst.For) -> None:
        per_sample = self._per_sample(node.iter, set())
        self._element_names.append(set(target_names(node.target)) if per_sample else set())

    def _per_sample(self, iterable: cst.BaseExpression, inner: set[str]) -> bool:
        """Iterating the samples of a batch: ``targets``, ``zip(images, targets)``,
        ``enumerate(boxes)``, or the fields of one sample (``t.items()``) — not a loader
        (its elements are whole batches) and not a module's fields or parameters."""
        if self.context.flow.is_loader(iterable):
            return False
        if isinstance(iterable, cst.Call):
            func = iterable.func
            if isinstance(func, cst.Name) and func.value in ("zip", "enumerate", "reversed"):
                return any(self._per_sample(a.value, inner) for a in iterable.args)
            if isinstance(func, cst.Attribute) and func.attr.value in ("items", "values"):
                # The fields of a sample the loop or comprehension already walks; not the
                # ``.items()`` of a dictionary named like samples (pvcnn's ``for k, v in
                # targets.items(): targets[k] = v.to(device)``): a list of samples has no
                # ``items``, so that dictionary holds the batch's fields, each one tensor.
                root = root_name(func.value)
                return root in inner.union(*self._element_names)
            return False
        return is_sample_collection(iterable) or self.context.kind_of(iterable) is Kind.TENSOR_DICT_SEQUENCE

    def leave_For(self, node: cst.For) -> None:
        self._element_names.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.append([node, None])

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._functions.pop()

    @staticmethod
    def _calls_itself(entry: list) -> bool:
        if entry[1] is None:
            entry[1] = _calls_itself_per_element(entry[0])
        return entry[1]

    def visit_Call(self, node: cst.Call) -> None:
        if not is_host_transfer(node):
            return
        root = root_name(node.func.value)  # type: ignore[union-attr]
        per_element = any(root in names for names in self._element_names)
        recursive = bool(self._functions) and self._calls_itself(self._functions[-1])
        if per_element or recursive:
            how = "recursively, one tensor at a time" if recursive and not per_element else "element by element"
            self.report(
                node,
                f"Host-to-device copy applied {how}: one small copy (and, from pageable "
                "memory, one sync) per sample; pad in `collate_fn` and copy the batch once"
                f"{self.context.context_phrase()}",
            )


class _SelfCallFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == self.name:
            self.found = True


def _calls_itself_per_element(node: cst.FunctionDef) -> bool:
    """A helper like the seed's ``data_to_device`` that maps itself over a sequence."""
    finder = _SelfCallFinder(node.name.value)
    for comprehension in _comprehensions(node.body):
        walk(comprehension, finder)
    return finder.found


def _comprehensions(body: cst.CSTNode):
    found: list[cst.CSTNode] = []

    class _Collect(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
            found.append(node)

        def visit_ListComp(self, node: cst.ListComp) -> None:
            found.append(node)

    walk(body, _Collect())
    return found
