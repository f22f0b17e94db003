"""What a loop over a data loader shows about where its batches live.

A loader's workers build host tensors, and a loop that moves some of what it yields to
a device (``image = image.to(device)``, also through a name bound to a field:
``videos = batch[0]; videos.to(device)``, or an element in a comprehension:
``images = list(img.to(device) for img in images)``) says it gets them there; so does reading a
field with ``.numpy()``, which only a host tensor allows. What the loop does not move
stays on the host.

A dictionary whose fields the loop replaces with device values only at keys it spells
(``batch["pred"] = model(images)``, ``batch["x"] = batch["x"].cuda()``) still holds the
loader's host tensors at every other key it spells: MONAI's ``val_data["label"].cpu()``
after ``val_data["pred"] = sliding_window_inference(...)``. Not a batch the loop changes
in place otherwise: a dictionary whose fields it replaces at computed keys
(``batch[k] = batch[k].cuda()``), or wholesale (``batch.update(...)``), a list whose
elements it changes so (``for t in targets: t["boxes"] = t["boxes"].to(device)``), an object that moves its
own fields (``batch.to(device)`` as a statement: PyG's ``Data``, Hugging Face's
``BatchEncoding``), or one it hands with a device to a helper that may move it in place
(``move_to_device(batch, device)``). Reading such a batch's fields after the change
may wait for the device. Only what the name holds before the body rebinds it is the
loader's batch: ``target = target.cuda(); gpu_metric(output, target)`` changes a copy.
"""

from __future__ import annotations

import re

import libcst as cst

from synclint.analysis.devices import is_device_argument, moves_to_a_device
from synclint.analysis.imports import callee_name
from synclint.analysis.reads import names_read
from synclint.analysis.targets import target_name_nodes
from synclint.traversal import walk

#: Methods that replace a dictionary's values in place.
_STORING_METHODS = frozenset({"update", "setdefault", "__setitem__"})
#: A helper named for a move to a device: ``to_device``, ``move_to_cuda``, ``batch2gpu``.
_DEVICE_HELPER = re.compile(r"device|cuda|gpu", re.IGNORECASE)


def host_batch_names(body: cst.BaseSuite, names: set[str], host_loader: bool = False,
                     drawn_by: cst.Assign | None = None, counters: frozenset[str] = frozenset()) -> dict[str, frozenset[str]]:
    """The names among ``names`` (a loop's targets, over a loader) that hold host batches
    in ``body``, each with the keys (spelled as strings) at which the body stores device
    values in it (its fields at every other key it spells stay on the host): none unless
    the body shows the loader yields host tensors, or the loader's settings do
    (``host_loader``: pinned, or with workers), and never one the body changes in place
    otherwise. ``drawn_by``: the statement of ``body`` that binds them to a batch
    (``batch = next(it)``), where they begin to hold it, instead of a loop's header.
    ``counters``: the names among ``names`` that count the batches (``i`` of ``for i, batch
    in enumerate(loader)``): what the body computes from them alone is no part of a batch."""
    scan = _BatchUses(names, drawn_by, counters)
    walk(body, scan)  # read-only: ``body.visit`` would rebuild every node
    readable = names | scan.fields.keys()
    # ``.numpy()`` proves the residency of what the name holds when it is read: only
    # of a field if the name holds nothing else (``x = batch[0]; x = model(x).cpu()``).
    numpy_fields = {name for name in scan.numpy_read & readable if name not in scan.bound_otherwise}
    if not (host_loader or scan.moved & readable or scan.moved_derived or numpy_fields):
        return {}
    device_names = {name for name, value in scan.bindings if _device_value(value, set())}
    device_keys: dict[str, set[str]] = {}
    changed = set(scan.changed)
    for name, key, value in scan.stores:
        if _device_value(value, device_names):
            if key is None:
                changed.add(name)
            else:
                device_keys.setdefault(name, set()).add(key)
    return {name: frozenset(device_keys.get(name, ())) for name in names - changed}


#: Methods by which an object moves its own fields and returns itself (PyG's ``Data.to``,
#: ``cuda``, ``apply``; Hugging Face's ``BatchEncoding.to``).
_OBJECT_MOVES = frozenset({"to", "apply", "cuda", "xpu", "npu", "mps"})


def objects_moved(body: cst.CSTNode, names: set[str]) -> set[str]:
    """The names among ``names`` whose object ``body`` moves wherever the call stands, not
    only as a statement (``out = model(data.to(device))``, ``data.apply(f)``) or whose
    attributes it sets by name (``setattr(data, "y", y.cuda())``): fields of such an object
    read as attributes (``data.y``) may be on the device afterwards."""
    found: set[str] = set()
    for node in _calls(body):
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in names:
            if func.attr.value in _OBJECT_MOVES:
                found.add(func.value.value)
        elif isinstance(func, cst.Name) and func.value == "setattr" and node.args:
            first = node.args[0].value
            if isinstance(first, cst.Name) and first.value in names:
                found.add(first.value)
    return found


def _calls(body: cst.CSTNode) -> list[cst.Call]:
    calls: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            calls.append(node)

    walk(body, _Calls())
    return calls


def _device_value(node: cst.BaseExpression, device_names: set[str]) -> bool:
    """An expression that builds on a device: a move (``x.cuda()``), a call given a device
    (``move(x, device)``) or a name bound to either."""
    scan = _DeviceValue(device_names)
    walk(node, scan)
    return scan.found


class _DeviceValue(cst.CSTVisitor):
    def __init__(self, device_names: set[str]) -> None:
        super().__init__()
        self.device_names = device_names
        self.found = False

    def visit_Call(self, node: cst.Call) -> bool:
        self.found = self.found or moves_to_a_device(node) or any(is_device_argument(a.value) for a in node.args)
        return not self.found

    def visit_Name(self, node: cst.Name) -> bool:
        self.found = self.found or node.value in self.device_names
        return False


class _BatchUses(cst.CSTVisitor):
    """How a loop's body uses the names its target binds (``batch``) and the names it
    binds to their fields (``videos = batch[0]``)."""

    def __init__(self, names: set[str], drawn_by: cst.Assign | None = None,
                 counters: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.names = names
        self.counters = counters
        self.drawn_by = drawn_by
        self.fields: dict[str, str] = {}  # ``videos`` of ``videos = batch[0]``, and its batch
        self.bound_otherwise: set[str] = set()  # names bound to anything but a field
        self.bindings: list[tuple[str, cst.BaseExpression]] = []  # each name and a value it is bound to
        #: Names bound to what the body computes from the batch, its fields or such names
        #: (GraphRNN: ``x_unsorted = data['x'].float()``, ``x = torch.index_select(x_unsorted,
        #: 0, order)``): moving one (``x = Variable(x).cuda()``) uploads what the loader gave,
        #: which is then on the host, as moving a field says.
        self.derived: set[str] = set()
        #: Names moved where they hold such a value (not ``hidden = hidden.cuda()`` above
        #: ``hidden = model(x, hidden)``: the caller's state, then).
        self.moved_derived: set[str] = set()
        self.moved: set[str] = set()  # names moved to a device, or whose fields are
        self.numpy_read: set[str] = set()  # names read with ``.numpy()``, or whose fields are
        self.stores: list[tuple[str, str | None, cst.BaseExpression]] = []  # ``batch["x"] = value``: key "x"
        self.changed: set[str] = set()  # batches changed in place otherwise
        #: A comprehension's target -> the batch (or field) it iterates: ``img`` of
        #: ``[img.to(device) for img in images]``, ``v`` of ``{k: v.cuda() for k, v in t.items()}``;
        #: None for one that iterates anything else. Only inside the comprehension: its
        #: targets don't leak, and a later ``img`` (``for img in extra: img.cuda()``) is another.
        self.element_of: dict[str, str | None] = {}
        self._outer_elements: list[dict[str, str | None]] = []
        #: A ``for`` loop's target -> the batch whose elements it takes: ``t`` of ``for t in
        #: targets``, also of a field (``boxes = batch[1]; for t in boxes``). Storing in one
        #: (``t["boxes"] = t["boxes"].to(device)``) changes the batch in place.
        self.elements: dict[str, str] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def _enter_comprehension(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp | cst.DictComp) -> None:
        self._iterate(node.for_in)

    def _leave_comprehension(self, original_node: cst.CSTNode) -> None:
        self.element_of = self._outer_elements.pop()

    # (Per-type hooks, as ``walk`` calls them directly: one pair serves the four kinds.)
    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _enter_comprehension
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comprehension

    def _iterate(self, clause: cst.CompFor | None) -> None:
        """A comprehension over a batch, or over a field of one, moves the batch when it
        moves an element (torchvision's detection references: ``images = list(img.to(device)
        for img in images)``; CCT's ``[model(img[0].cuda()) for img in pack["img"]]``): record
        which batch each of its targets iterates. (Only a name, a field by a string key,
        ``t.items()`` or ``t.values()`` is followed.) A target that iterates anything
        else shadows the name it spells: ``img`` of ``[img.cuda() for img in other]``, in
        ``[... for img in images]`` or not, ``batch`` of ``[batch.cuda() for batch in other]``."""
        self._outer_elements.append(self.element_of)
        self.element_of = dict(self.element_of)
        while clause is not None:
            source = clause.iter
            if (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
                    and source.func.attr.value in ("items", "values") and not source.args):
                source = source.func.value
            batch = None
            if isinstance(source, cst.Name):
                batch = self.element_of.get(source.value, source.value)
                if not (batch in self.names or batch in self.fields):
                    batch = None
            elif string_key(source) is not None:  # a field by its key: ``img[0].cuda() for img in pack["img"]``
                batch = self.element_of.get(source.value.value, source.value.value)
                if batch not in self.names:  # (``pack`` of ``for pack in others for img in pack["img"]``: another)
                    batch = None
            for name in target_name_nodes(clause.target):
                self.element_of[name.value] = batch
            clause = clause.inner_for_in

    def visit_Assign(self, node: cst.Assign) -> None:
        if node is self.drawn_by or self._draws_again(node):
            # Where the names take the batch: no rebinding of it, and what they held above
            # (``batch = None``) is no longer what they hold.
            self.bound_otherwise.difference_update(self.names)
            for name in self.names:
                self.fields.pop(name, None)
            return
        for target in node.targets:
            self._bind(target.target, node.value)

    def _draws_again(self, node: cst.Assign) -> bool:
        """Another ``batch = next(...)`` of the drawn names: ``batch = next(it, None); if batch
        is None: it = iter(loader); batch = next(it)`` draws the loader's batch twice. Taken
        for a rebinding, it would hide what the body does to the batch after either draw
        (``move_to(batch, device)``); where it draws from elsewhere, the flow rebinds the
        names there anyway (an in-place change seen here only makes the batch less host)."""
        if self.drawn_by is None:
            return False
        value = node.value
        if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "next"):
            return False
        return {name.value for target in node.targets for name in target_name_nodes(target.target)} == self.names

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._bind(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self.bound_otherwise.update(name.value for name in target_name_nodes(node.target))
        source = node.iter.value if isinstance(node.iter, cst.Name) else None
        batch = source if self._holds_batch(source) else self.fields.get(source or "")
        if batch is not None:
            self.elements.update((name.value, batch) for name in target_name_nodes(node.target))

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            # ``data.y, data.x = data.y.cuda(), data.x.cuda()`` stores in the batch as two
            # assignments do, and ``images, labels = batch[0], batch[1]`` binds two fields:
            # element by element where the value is spelled out; else each stored element
            # from the whole value.
            values = value.elements if isinstance(value, (cst.Tuple, cst.List)) else ()
            if len(values) == len(target.elements) and not any(
                isinstance(element, cst.StarredElement) for element in (*values, *target.elements)
            ):
                for element, part in zip(target.elements, values):
                    self._bind(element.value, part.value)
                return
            if any(isinstance(element.value, (cst.Subscript, cst.Attribute)) for element in target.elements):
                for element in target.elements:
                    self._bind(element.value, value)
                return
            if (isinstance(value, cst.Name) and self._holds_batch(value.value)
                    and all(isinstance(element.value, cst.Name) for element in target.elements)):
                # habitat-lab's ``idx, question, answer, actions, length = batch``: each name
                # is a field of the batch, as ``images = batch[0]`` binds one (a starred
                # one, a list of fields, is not).
                for element in target.elements:
                    name = element.value.value  # type: ignore[attr-defined]  (names only)
                    if isinstance(element, cst.StarredElement):
                        self.bound_otherwise.add(name)
                    else:
                        self.fields[name] = value.value
                    self.derived.discard(name)
                    self.bindings.append((name, value))
                return
        if isinstance(target, (cst.Subscript, cst.Attribute)):
            root, _ = root_name(target, (cst.Subscript, cst.Attribute))
            batch = root if self._holds_batch(root) else self.fields.get(root or "") or self.elements.get(root or "")
            if batch is not None:  # ``batch["x"] = ...``, ``data.x = ...``, ``inputs = batch[0]; inputs["ids"] = ...``,
                # ``for t in targets: t["boxes"] = ...``
                key = string_key(target) if root == batch else None
                self.stores.append((batch, key, value))
            return
        if isinstance(target, cst.Name) and _reads(value, self._seeds()):
            self.derived.add(target.value)
        elif isinstance(target, cst.Name):
            self.derived.discard(target.value)
        root, nested = root_name(value, cst.Subscript)
        if isinstance(target, cst.Name) and root in self.names and (nested or target.value != root):
            # (A field, ``images = batch[0]``, or the batch itself, ``sample = batch``.)
            self.fields[target.value] = root
        else:
            self.bound_otherwise.update(name.value for name in target_name_nodes(target))
        self.bindings.extend((name.value, value) for name in target_name_nodes(target))

    def _seeds(self) -> set[str]:
        """The names that hold the batch, a field of it or what the body computed from them
        here: not a counter (``i`` of ``enumerate``), nor a target or field the body rebound
        to something else (``x = torch.zeros(4, 16)``)."""
        held = (self.names - self.counters) | self.fields.keys()
        return {name for name in held if name not in self.bound_otherwise} | self.derived

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver, _ = root_name(_unwrapped(func.value), cst.Subscript)
            if receiver is not None and moves_to_a_device(node):
                moved = self.element_of.get(receiver, receiver)
                if moved is not None:  # not a comprehension's element of something else
                    self.moved.add(moved)
                    if moved in self.derived:
                        self.moved_derived.add(moved)
            elif receiver is not None and func.attr.value == "numpy":
                self.numpy_read.add(receiver)
        given = {arg.value.value for arg in node.args if isinstance(arg.value, cst.Name) and self._holds_batch(arg.value.value)}
        if given and _DEVICE_HELPER.search(callee_name(func)):
            self.changed.update(given)  # ``inputs = to_device(batch)`` may move it in place too

    def visit_Expr(self, node: cst.Expr) -> None:
        """A call whose result is dropped works by its effects: ``batch.to(device)`` moves
        the batch's own fields, ``batch.update(...)`` replaces some, ``move(batch, device)``
        may move them."""
        call = node.value
        if not isinstance(call, cst.Call):
            return
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and self._holds_batch(func.value.value):
            if moves_to_a_device(call) or func.attr.value in _STORING_METHODS:
                self.changed.add(func.value.value)
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in self.elements:
            if moves_to_a_device(call) or func.attr.value in _STORING_METHODS:  # ``for t in targets: t.update(...)``
                self.changed.add(self.elements[func.value.value])
        elif any(is_device_argument(arg.value) for arg in call.args):
            self.changed.update(
                arg.value.value for arg in call.args if isinstance(arg.value, cst.Name) and self._holds_batch(arg.value.value)
            )

    def _holds_batch(self, name: str | None) -> bool:
        """``name`` is one of the loop's targets and still holds what the loader gave: the
        body has not rebound it above this point (``target = target.cuda()`` before
        ``gpu_metric(output, target)`` hands over a copy, not the batch)."""
        return name in self.names and name not in self.bound_otherwise and name not in self.fields


def _unwrapped(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` of ``Variable(x)`` (``torch.autograd.Variable``, which returns the tensor itself
    since PyTorch 0.4): ``Variable(x).cuda()`` moves ``x``."""
    if (isinstance(node, cst.Call) and len(node.args) == 1 and node.args[0].keyword is None
            and callee_name(node.func) == "Variable"):
        return node.args[0].value
    return node


def _reads(value: cst.BaseExpression, names: set[str]) -> bool:
    """``value`` reads one of ``names`` (as a variable, and for its data: ``x.size(0)`` reads
    none of ``x``'s)."""
    return bool(names) and not names_read(value, values_only=True).isdisjoint(names)


def root_name(node: cst.BaseExpression, through: type | tuple[type, ...]) -> tuple[str | None, bool]:
    """The name at the root of ``node`` looking through ``through`` nodes
    (``batch["x"][0]``: ``batch``), and whether there were any."""
    nested = False
    while isinstance(node, through):
        node, nested = node.value, True
    return (node.value if isinstance(node, cst.Name) else None), nested


def string_key(node: cst.BaseExpression) -> str | None:
    """``"pred"`` of ``batch["pred"]``: the key of a subscript of a name by one string
    literal; None for anything else (``batch[k]``, ``batch["a"]["b"]``, ``batch.x``)."""
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name)):
        return None
    return literal_key(node)


def literal_key(node: cst.Subscript) -> str | None:
    """The key of a subscript by one string literal (``"pred"`` of ``x["pred"]``, whatever
    ``x`` is), or None (``x[k]``, ``x[0]``, ``x["a", "b"]``)."""
    if len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
        return index.value.evaluated_value if isinstance(index.value.evaluated_value, str) else None
    return None


