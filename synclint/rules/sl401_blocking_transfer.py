from __future__ import annotations

import libcst as cst

from synclint.analysis.batch_derivation import VIEWS
from synclint.analysis.devices import is_device_argument
from synclint.analysis.host_batches import literal_key
from synclint.analysis.imports import dotted_name
from synclint.analysis.inference import asks_not_to_block
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import is_host_transfer, root_name, target_names



class BlockingTransfer(Rule):
    """Flags host-to-device copies of loader batches without `non_blocking=True`.

    ## What it does
    Finds `.to(device)` and `.cuda()` calls on the values a `for` loop takes
    from a data loader (`for x, y in train_loader:`, `for step, batch in
    enumerate(loader):`), or on a name bound to a field of one (`labels =
    batch["label"]`), that do not pass `non_blocking=True` (by keyword, or
    by position: `x.cuda(0, True)`, `x.to(device, dtype, True)`). A `.to()` whose
    argument is a dtype (`torch.float16`, a name ending in `_dtype`) or the CPU
    is a cast or a read-back, not an upload, and is not flagged. Nor is a move of
    a name the body already bound to its own device copy (`y = y.float().to(device)`
    then `y[:, -n:].to(device)`: nothing left to copy), or to what a collective
    returns (`out, y = accelerator.gather_for_metrics((out, y))`: device tensors),
    or, outside a branch, to what a helper given the batch and a device returns
    (`batch = batch_to(batch, device)`) or to a list of its elements' device copies
    (`data = [t.cuda() for t in data]`, then `data[2].cuda()`).

    A view of a batch (`x = x.unsqueeze(1)`, `batch["img"][:, 0]`) and a conversion
    of one made on the host (`x = batch["img"].float()`, `.to(torch.float16)`,
    `.permute(...).contiguous()` or `.reshape()`) are the loader's data too. For a
    conversion the advice is to move first and convert on the device: a conversion
    that changes anything makes a new tensor in pageable memory, whose copy blocks
    even with `non_blocking=True` (SL403 reports such a copy).

    ## Why is this bad?
    A blocking copy makes the host wait until the copy is done — and a copy
    is queued behind every kernel already launched, so in practice the CPU
    waits for the previous step to finish before it can start queueing the
    next one.

    ## Example
    ```python
    for images, labels in loader:
        images = images.to(device)
    ```

    ## Use instead
    ```python
    loader = DataLoader(dataset, batch_size=64, pin_memory=True)
    for images, labels in loader:
        images = images.to(device, non_blocking=True)
    ```

    ## Fix safety
    Adding `non_blocking=True` is safe: the copy is ordered on the current
    stream before every kernel that reads it. It only overlaps with compute
    when the loader pins memory (see SL402). The fix is offered only when the
    receiver is known to be a `torch.Tensor` (a torch result, a `Tensor`
    annotation): loader batches are often custom objects whose `.to` takes no
    `non_blocking` (DETR's `NestedTensor.to(device)`). No fix either when
    `non_blocking` may already be passed positionally (`.to(d, dtype, False)`),
    is passed as `False` explicitly (the author's choice), or `*args` /
    `**kwargs` may pass it. The finding's message says which.
    """

    code = "SL401"
    name = "blocking-transfer"
    TOKENS = frozenset({".to", ".cuda"})  # see synclint.prefilter
    fix_applicability = "safe"

    VALID = (
        # A slice of the batch already moved (iTransformer's ``vali``): no copy.
        "import torch\nfor x, y in loader:\n    y = y.float().to(device, non_blocking=True)\n"
        "    y = y[:, -4:].to(device)\n",
        "import torch\nfor x, y in loader:\n    x = x.to(device, non_blocking=True)\n",
        # What a collective returns (Time-LLM's ``vali``) is on the device: no copy.
        "import torch\nfor x, y in loader:\n    out, y = accelerator.gather_for_metrics((model(x), y))\n"
        "    y = y[:, -4:].to(accelerator.device)\n",
        "import torch\nfor x, y in loader:\n    x = x.to('cpu')\n",
        "import torch\nmodel = model.to(device)\n",
        "import torch\nfor i in range(3):\n    w = w.to(device)\n",
        "import torch\nfor x, y in loader:\n    x = x.cuda(non_blocking=True)\n",
        # non_blocking passed by position: Tensor.cuda(device, non_blocking), Tensor.to(device, dtype, non_blocking).
        "import torch\nfor x, y in loader:\n    x = x.cuda(0, True)\n",
        "import torch\nfor x, y in loader:\n    x = x.to(device, torch.float16, True)\n",
        "import torch\nfor x in items:\n    x = x.to(device)\n",
        # The fields of a batch, moved asking not to block (pvcnn's train.py).
        "import torch\nfor x, targets in loader:\n    for k, v in targets.items():\n"
        "        targets[k] = v.to(device, non_blocking=True)\n",
        # The batch rebound to its fields' device copies: walking them again copies nothing.
        "import torch\nfor batch in loader:\n    batch = {k: v.cuda(non_blocking=True) for k, v in batch.items()}\n"
        "    inputs = {k: v.to(device) for k, v in batch.items() if k != 'label'}\n",
        # A cast of a batch already on the device (named as a dtype).
        "import torch\nfor x, y in loader:\n    x = x.to(device, non_blocking=True).to(self.img_dtype)\n",
        # The batch rebound to its elements' device copies, or to what a helper given a
        # device returns: a field of it is on the device already (TransMorph, DeBERTa).
        "import torch\nfor data in loader:\n    data = [t.cuda(non_blocking=True) for t in data]\n"
        "    seg = data[2]\n    seg = seg.cuda().float()\n",
        "import torch\nfor batch in loader:\n    batch = batch_to(batch, device)\n    labels = batch['labels'].to(device)\n",
    )
    INVALID = (
        # A list of the batch's elements moved in one branch leaves the other branch's batch
        # a loader batch (AlphaPose's train.py): its copy blocks.
        Invalid("import torch\nfor inps, labels in loader:\n    if isinstance(inps, list):\n"
                "        inps = [inp.cuda() for inp in inps]\n    else:\n        inps = inps.cuda()\n", 6, 16),
        # So does a batch handed to a helper with a device in one branch: the other branch's
        # batch is still the loader's.
        Invalid("import torch\nfor batch in loader:\n    if isinstance(batch, dict):\n"
                "        batch = to_device(batch, device)\n    else:\n        batch = batch.to(device)\n", 6, 17),
        # The fields of a batch, each moved: copies of the loader's host tensors.
        Invalid("import torch\nfor batch in loader:\n    batch = {k: v.cuda() for k, v in batch.items()}\n", 3, 17),
        Invalid("import torch\nfor x, targets in loader:\n    for k, v in targets.items():\n        targets[k] = v.to(device)\n",
                4, 22),
        # The fields of a batch unpacked from it (waveglow's `mel, audio = batch`).
        Invalid("import torch\nfor batch in loader:\n    mel, audio = batch\n    mel = mel.cuda()\n", 4, 11),
        # A cast keeps the loader's host tensor: its move is still a copy.
        Invalid("import torch\nfor x, y in loader:\n    x = x.float()\n    x = x.to(device)\n", 4, 9),
        # A view of the batch, or a conversion of a field of it, is the loader's data too.
        Invalid("import torch\nfor x, y in loader:\n    x = x.unsqueeze(1)\n    x = x.to(device)\n", 4, 9),
        Invalid("import torch\nfor batch in loader:\n    x = batch['img']\n    x = x.permute(0, 3, 1, 2).float()\n"
                "    x = x.to(device)\n", 5, 9),
        # So does what a helper that is no collective returns.
        Invalid("import torch\nfor x, y in loader:\n    x, y = augment(x, y)\n    x = x.to(device)\n", 4, 9),
        # A tensor's gather, or torch's, of the host batch is on the host: its move copies.
        Invalid("import torch\nfor x, idx in loader:\n    x = x.gather(1, idx)\n    x = x.to(device)\n", 4, 9),
        Invalid("import torch\nfor x, idx in loader:\n    x = torch.gather(x, 1, idx)\n    x = x.to(device)\n", 4, 9),
        # Loader batches of unknown type: flagged, but no fix (a custom `.to` may not take
        # `non_blocking`: DETR's NestedTensor.to(device) would raise a TypeError).
        Invalid("import torch\nfor x, y in loader:\n    x = x.to(device)\n", 3, 9),
        Invalid("import torch\nfor step, (x, y) in enumerate(train_loader):\n    y = y.cuda()\n", 3, 9),
        Invalid("import torch\nfor batch in dataloader:\n    x = batch[0].to(device=dev)\n", 3, 9),
        Invalid("import torch\nfor data in val_dl:\n    out = model(data['img'].to(device))\n", 3, 17),
        Invalid("import torch\nfor x, y in loader:\n    x = x.to(device, non_blocking=False)\n", 3, 9),
        Invalid("import torch\npbar = tqdm(enumerate(train_loader))\nfor i, (imgs, targets) in pbar:\n    loss = f(targets.to(device))\n", 4, 14),
        Invalid("import torch\ndef train(model, train_loader):\n    for images, target in train_loader:\n        images = images.cuda(0)\n", 4, 18),
        # Known tensors: fixed.
        Invalid("import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device)\n", 5, 13,
                "import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, non_blocking=True)\n"),
        Invalid("import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, torch.float16)\n", 5, 13,
                "import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, torch.float16, non_blocking=True)\n"),
        # non_blocking passed positionally, or explicitly False: no fix.
        Invalid("import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, torch.float64, False)\n", 5, 13),
        Invalid("import torch\ndef train(loader, device):\n    for x, y in loader:\n        x: torch.Tensor\n        x = x.to(device, non_blocking=False)\n", 5, 13),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._batch_names: list[set[str]] = []
        self._fields: list[set[str]] = []  # the names bound to a field of a batch (``labels = batch["label"]``)
        #: (batch, key) of the fields the loop stored so far (``batch["x"] = x.cuda()``), the
        #: key None where not a string (``batch[k] = ...``: any field).
        self._stored: list[set[tuple[str | None, str | None]]] = []
        #: Per loop (or comprehension), how many ``if`` blocks of its body enclose the node.
        self._branches: list[int] = []

    def visit_If(self, node: cst.If) -> None:
        if self._branches:
            self._branches[-1] += 1

    def leave_If(self, original_node: cst.If) -> None:
        if self._branches:
            self._branches[-1] -= 1

    def visit_For(self, node: cst.For) -> None:
        iterable = node.iter
        if isinstance(iterable, cst.Call) and getattr(iterable.func, "value", None) == "enumerate" and iterable.args:
            iterable = iterable.args[0].value
        walks = self.context.flow.is_loader(iterable) or self._walks_a_batch(iterable)
        for fields in self._fields:
            fields.difference_update(target_names(node.target))
        self._enter(set(target_names(node.target)) if walks else set())

    def leave_For(self, node: cst.For) -> None:
        self._leave()

    def _enter(self, batch_names: set[str]) -> None:
        """A loop or comprehension begins: its own batch names, fields, stores and branches."""
        self._batch_names.append(batch_names)
        self._fields.append(set())
        self._stored.append(set())
        self._branches.append(0)

    def _leave(self) -> None:
        self._batch_names.pop()
        self._fields.pop()
        self._stored.pop()
        self._branches.pop()

    def _stored_keys(self, batch: str | None) -> set[str | None]:
        return {key for stored in self._stored for name, key in stored if name == batch}

    # The fields of a batch walked one by one are the loader's host tensors too: contriever's
    # ``{key: value.cuda() for key, value in batch.items()}``, pvcnn's ``for k, v in
    # targets.items(): targets[k] = v.to(device, non_blocking=True)`` (asked, so no finding).
    def _enter_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        names: set[str] = set()
        clause = node.for_in
        while clause is not None:
            if self._walks_a_batch(clause.iter):
                names.update(target_names(clause.target))
            clause = clause.inner_for_in
        self._enter(names)

    def _leave_comprehension(self, original_node: cst.CSTNode) -> None:
        self._leave()

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comprehension

    def _walks_a_batch(self, iterable: cst.BaseExpression) -> bool:
        """``batch.items()`` or ``batch.values()`` of a loader's batch: its fields. (Not
        ``batch`` itself: the elements of a list are samples, whose copies SL302 reports.)"""
        if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)
                and iterable.func.attr.value in ("items", "values") and not iterable.args):
            return False
        receiver = iterable.func.value
        return isinstance(receiver, cst.Name) and receiver.value in set().union(*self._batch_names)

    def leave_Assign(self, node: cst.Assign) -> None:
        """``batch_y = batch_y.float().to(device)``: the name now holds the device copy, and a
        later ``batch_y[:, -n:].to(device)`` (iTransformer) copies nothing; so does a name
        bound to what a collective returns (``outputs, batch_y =
        accelerator.gather_for_metrics((outputs, batch_y))``, Time-LLM: it gathers device
        tensors); and a batch rebound to its fields' device copies (``batch = {k: v.cuda()
        for k, v in batch.items()}``: a later walk of ``batch.items()`` copies nothing).
        (``x = x.float()`` keeps the loader's host tensor: its later move is still a copy.)
        A name bound to a field of a batch (``labels = sample["label"]``) holds the loader's
        host tensor too: its move is a copy of the batch."""
        if not self._batch_names:
            return
        batches = set().union(*self._batch_names)
        for target in node.targets:
            batch = root_name(target.target) if isinstance(target.target, cst.Subscript) else None
            if batch in batches:  # (noted at the loop that binds the batch: it outlives inner loops)
                level = max(i for i, names in enumerate(self._batch_names) if batch in names)
                self._stored[level].add((batch, _field_key(target.target)))
        fields = None
        if isinstance(node.value, cst.Name) and node.value.value in batches and len(node.targets) == 1 \
                and isinstance(node.targets[0].target, (cst.Tuple, cst.List)):
            # ``mel, audio = batch`` (waveglow's train.py): the batch's fields, each the loader's.
            fields = set(target_names(node.targets[0].target))
        elif isinstance(node.value, cst.Subscript) and root_name(node.value) in batches:
            stored = self._stored_keys(root_name(node.value))
            if None in stored or _field_key(node.value) in stored:
                return  # ``batch["x"] = batch["x"].cuda()`` earlier on this pass: a device copy
            fields = {name for target in node.targets if isinstance(target.target, cst.Name)
                      for name in target_names(target.target)}
        if fields is not None:
            self._batch_names[-1].update(fields)
            self._fields[-1].update(fields - batches)  # (``batch = batch["net_input"]``: still the loop's)
            return
        # A name bound to a field holds it through casts of itself (``labels = labels.float()``);
        # rebound to anything else (``labels = torch.tensor(...)``, ``out = model(out)``) it
        # holds no batch field.
        for target in node.targets:
            if isinstance(target.target, cst.Name) and target.target.value in set().union(*self._fields) \
                    and _chain_root(node.value) not in batches:
                for names in self._batch_names + self._fields:
                    names.discard(target.target.value)
        # (A helper's or a list's device copy only outside a branch: in ``if isinstance(batch,
        # dict): batch = to_device(batch, device) else: batch = batch.to(device)``, read in
        # order, the ``else`` still copies the loader's batch.)
        if not (_moves_to_a_device(node.value) or self._collective(node.value)
                or (not self._branches[-1] and (_hands_to_a_device(node.value, batches)
                                                or _moves_its_elements(node.value)))):
            return
        for target in node.targets:
            for name in target_names(target.target):
                for names in self._batch_names:
                    names.discard(name)

    def _collective(self, value: cst.BaseExpression) -> bool:
        """``accelerator.gather_for_metrics((outputs, batch_y))``, ``accelerator.reduce(loss)``:
        a method of an object (or a function of a distributed package) of a collective's
        name. Not a tensor's own method (``x = x.gather(1, index)`` keeps the loader's host
        tensor), nor a function of torch, numpy or functools (``torch.gather(x, 1, index)``,
        ``functools.reduce``): they return where their inputs are."""
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in _COLLECTIVES):
            return False
        qualified = self.context.qualify(value.func)
        if qualified is not None:
            return qualified.startswith(_COLLECTIVE_MODULES)
        receiver = dotted_name(value.func.value)
        return receiver is not None and receiver.split(".", 1)[0] not in set().union(*self._batch_names)

    def visit_Call(self, node: cst.Call) -> None:
        if not self._batch_names or not is_host_transfer(node):
            return
        moved = node.func.value  # type: ignore[union-attr]
        # A view or a conversion of a batch (``images = images.unsqueeze(1)``, ``x =
        # batch["img"].float()``) is the loader's data too, as the flow tracks it.
        derived = self.context.flow.batch_derivation(moved)
        if root_name(moved) not in set().union(*self._batch_names) and derived is None:
            return
        if asks_not_to_block(node):  # by keyword or by position (x.cuda(0, True))
            return
        what, advice = "a loader batch", "pass `non_blocking=True` (with a pinned loader)"
        if derived is not None and derived not in VIEWS:
            what = f"a loader batch converted on the host (`.{derived}()`)"
            advice = ("move the batch first, with `non_blocking=True` (and a pinned loader), and convert it on "
                      "the device: a conversion that changes anything makes a new tensor in pageable memory, "
                      "whose copy blocks even with `non_blocking=True`")
        self.report(
            node,
            f"Blocking host-to-device copy of {what}: the host waits for the copy, "
            f"which waits for every queued kernel; {advice}{self.context.context_phrase()}",
            self.propose_fix(node),
        )


#: Methods of Accelerate and ``torch.distributed`` that gather or reduce tensors across
#: processes: they work on device tensors and return them.
_COLLECTIVES = frozenset({"gather", "gather_for_metrics", "all_gather", "reduce", "pad_across_processes"})
#: Imported modules whose functions of those names are collectives (``torch.gather``,
#: ``functools.reduce``, ``einops.reduce`` are not).
_COLLECTIVE_MODULES = ("torch.distributed.", "torch_xla.", "horovod.", "accelerate.")


def _field_key(node: cst.Subscript) -> str | None:
    """The string key at which a subscript reads its batch name (``"x"`` of ``batch["x"]``
    and of ``batch["x"][0]``), or None (``batch[k]``, ``batch[0]``)."""
    while isinstance(node.value, cst.Subscript):
        node = node.value
    return literal_key(node)


def _chain_root(value: cst.BaseExpression) -> str | None:
    """The name a chain of method calls, attributes and subscripts starts from: ``labels``
    for ``labels.long().view(-1)``; None for a call of a function (``torch.tensor(...)``)."""
    while True:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            value = value.func.value
        elif isinstance(value, (cst.Attribute, cst.Subscript)):
            value = value.value
        else:
            break
    return value.value if isinstance(value, cst.Name) else None


def _hands_to_a_device(value: cst.BaseExpression, batches: set[str]) -> bool:
    """``batch = batch_to(batch, device)`` (DeBERTa's ``run_eval``), ``x, y =
    to_device(x, y, device=dev)``: a helper (no method of the batch) given the batch and a
    device returns the batch moved there (see
    :func:`~synclint.analysis.host_batches.host_batch_names`), so a later move of a field
    copies nothing."""
    if not isinstance(value, cst.Call) or _chain_root(value) in batches:
        return False
    arguments = [argument.value for argument in value.args]
    return any(is_device_argument(argument) for argument in arguments) and any(
        _chain_root(argument) in batches for argument in arguments if not isinstance(argument, cst.Call))


def _moves_its_elements(value: cst.BaseExpression) -> bool:
    """``data = [t.cuda() for t in data]`` (TransMorph's ``infer_*.py``): a list of the
    elements moved, bound outside any branch of the loop's body, so that a later
    ``data[2].cuda()`` copies nothing. (In a branch, AlphaPose's ``if isinstance(inps,
    list): inps = [inp.cuda() for inp in inps] else: inps = inps.cuda()``, the other
    branch still holds the loader's batch: this rule reads statements in order, not
    branches.)"""
    return isinstance(value, (cst.ListComp, cst.GeneratorExp)) and _moves_to_a_device(value.elt)


def _moves_to_a_device(value: cst.BaseExpression) -> bool:
    """``x.to(device)``, ``x.float().cuda()``, ``x.cuda().float()``: a chain of method calls
    with a host-to-device transfer in it; or a dictionary comprehension of such moves
    (``{k: v.cuda(non_blocking=True) for k, v in batch.items()}``: the batch's fields, moved)."""
    if isinstance(value, cst.DictComp):
        return _moves_to_a_device(value.value)
    # (Not a list of moved elements: the elements are samples, and the name may be rebound
    # so in one branch only: AlphaPose's ``if isinstance(inps, list): inps = [inp.cuda() for
    # inp in inps] else: inps = inps.cuda()``, whose ``else`` copies a loader batch.)
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
        if is_host_transfer(value):
            return True
        value = value.func.value
    return False
