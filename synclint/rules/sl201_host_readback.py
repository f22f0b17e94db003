from __future__ import annotations

import libcst as cst

from synclint.analysis.imports import dotted_name
from synclint.analysis.inference import asks_not_to_block, keyword, positional
from synclint.catalogue import NumberArguments, SyncCondition, by_function, entry, number_arguments
from synclint.prefilter import TENSOR_EVIDENCE
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call, receiver_is_tensor

_READBACK = entry("SL201", "host read-back")
_DEVICE_TO_HOST = entry("SL201", "device-to-host copy")
_PY_BOOL = entry("SL201", "comparison returning a Python bool")
_CONVERSIONS = frozenset({"float", "int", "bool", "complex"})
_FORMATTERS = frozenset({"print", "str", "repr", "format"})
_READBACK_METHODS = frozenset({"cpu", "numpy", "item", "tolist"})
#: ``torch.Tensor([t1, t2])`` copies each element's value like ``torch.tensor``.
_LEGACY_CONSTRUCTORS = frozenset(
    {"torch.Tensor", "torch.FloatTensor", "torch.DoubleTensor", "torch.HalfTensor", "torch.LongTensor",
     "torch.IntTensor", "torch.BoolTensor", "torch.cuda.FloatTensor", "torch.cuda.LongTensor"}
)


def _is_text(node: cst.BaseExpression) -> bool:
    """A string literal, or literals combined with ``+`` / ``*`` (``"%11s" * 2 + "%g"``)."""
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        return _is_text(node.left) or _is_text(node.right)
    return False


def _is_cpu_device(node: cst.BaseExpression) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a name that says so (``cpu_device``)."""
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value == "cpu"
    if isinstance(node, cst.Call) and node.args:
        return _is_cpu_device(node.args[0].value)  # torch.device("cpu")
    return isinstance(node, (cst.Name, cst.Attribute)) and "cpu" in (dotted_name(node) or "").lower()


def _copies_without_waiting(call: cst.Call) -> bool:
    """``.to("cpu", non_blocking=True)``: PyTorch copies into pinned host memory and does not
    wait (the runtime rule agrees). A ``non_blocking=`` the code computes (``non_blocking=
    pinned and not accumulating``) is a per-call choice the code already makes; only a
    literal ``False`` is a proven wait. Passed by position too (``x.to("cpu", dtype, True)``)."""
    return asks_not_to_block(call)


def _called_on_self(node: cst.Call) -> bool:
    func = node.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value in ("self", "cls")


def _number_arguments(node: cst.Call, spec: NumberArguments, receivers: int = 0) -> list[cst.BaseExpression]:
    """The expressions ``node`` passes where ``spec`` says PyTorch takes a Python number
    (after ``receivers`` leading positional arguments: the tensor of ``torch.Tensor.m(x, ...)``)."""
    found = [arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value in spec.keywords]
    if spec.unless and keyword(node, spec.unless) is not None:
        return found
    passed = [arg.value for arg in positional(node)][receivers:]
    if spec.positions is not None:
        return found + [passed[i] for i in spec.positions if i < len(passed)]
    for value in passed + found:  # sizes one by one, or as a tuple or list
        if isinstance(value, (cst.Tuple, cst.List)):
            found += [element.value for element in value.elements if not isinstance(element, cst.StarredElement)]
    return found + [value for value in passed if not isinstance(value, (cst.Tuple, cst.List))]


class HostReadback(Rule):
    """Flags reads of device values on the host: `.item()`, `.tolist()`, `.cpu()`, `float(t)`, ...

    ## What it does
    Finds every place a tensor's *value* crosses to Python: `.item()`,
    `.tolist()`, `.cpu()`, `.to("cpu")` (of a tensor on the host, neither copies), `float(t)` / `int(t)` /
    `bool(t)`, `math.*(t)`, `torch.equal` / `torch.allclose` (they return a
    Python bool), a tensor used where Python needs an integer (slice bounds,
    `range(t)`) or a scalar (`alpha=t`), `torch.tensor([t1, t2])` (or the legacy
    `torch.Tensor([t1, t2])`) of device tensors, a tensor passed where an op takes
    a Python number: a factory's size, bound or fill value (`torch.arange(n.sum())`,
    `torch.zeros(t.max(), 4)`, `x.new_zeros(n)`, `torch.full(shape, t)`, tensor bounds of
    `torch.linspace`), a size, offset or count of a shape method or `topk` (`x.view(n, -1)`,
    `x.narrow(0, 0, n)`, `x.topk(k)`), and the scalar of a `_foreach_*` op where it selects the `Scalar`
    overload (`torch._foreach_add_(xs, t)` without `alpha=`, the `weight` of
    `torch._foreach_lerp_`; `torch._foreach_mul_(xs, t)` takes a tensor and is not flagged),
    printing or formatting a tensor (`print(t)`, `f"{t}"`), and the
    factorisations that read their error codes back to raise on bad input
    (`torch.linalg.cholesky` / `inv` / `solve` / `eigh`, `torch.cholesky`,
    `torch.inverse` and the `cholesky` / `inverse` methods; their `_ex`
    variants do not). A copy to the host with `non_blocking=` anything but a literal
    `False` is not flagged, nor one passed by position (`.to("cpu", dtype, True)`, `.to(cpu_buffer, True)`):
    `.to("cpu", non_blocking=True)` lands in pinned memory without
    waiting, and a computed flag is a choice the code already makes. `.numpy()` on its own
    is not flagged: it raises on a device tensor, so the tensor is already on the host
    (`.cpu().numpy()` is flagged at `.cpu()`).

    ## Why is this bad?
    The host cannot read a value the device has not computed yet: it blocks
    until every queued kernel has run. One `.item()` per step for logging
    turns an asynchronous training loop into a lock-step one.

    ## Example
    ```python
    for batch in loader:
        loss = step(batch)
        running += loss.item()
    ```

    ## Use instead
    ```python
    running = torch.zeros((), device=device)
    for batch in loader:
        running += step(batch).detach()
    print(running.item())  # once, after the loop or every N steps
    ```

    ## Fix safety
    One form is fixed (unsafe): a float literal accumulated per step with
    `total += x.item()` becomes `total += x.detach().double().reshape(())` and
    `total = float(total)` right after the loop. The values are bit-identical
    (`.item()` is a double, the same doubles are added in the same order) and the
    code after the loop sees a Python float again; offered only when `total` is a
    local bound to a float literal right before the loop, used inside the loop by
    that `+=` alone, and `x` is a tensor. Inside the loop `total` is a float64
    device tensor (MPS has no float64). Every other read-back has no automatic
    fix: where the value is needed on the host is a design choice.
    """

    syncs_every_call = True

    code = "SL201"
    device_sync = True
    name = "host-readback"
    TOKENS = TENSOR_EVIDENCE  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        # A size passed to a forward (``output_sz``: pytracking's distance map) is Python ints.
        "import torch\nclass DistanceMap(torch.nn.Module):\n    def forward(self, center, output_sz):\n"
        "        k0 = torch.arange(output_sz[0], device=center.device)\n        return k0 - center[:, 0]\n",
        # A resolution passed to a forward (eg3d's ray sampler) is a Python int.
        "import torch\nclass RaySampler(torch.nn.Module):\n    def forward(self, cam2world, intrinsics, resolution):\n"
        "        uv = torch.arange(resolution, device=cam2world.device)\n        return uv * intrinsics[:, 0, :1]\n",
        # Already on the host: moving it to the host (or to where a host tensor lives) copies nothing.
        "import torch\ndef f(y):\n    h = torch.as_tensor(y)\n    return torch.ones(3).to(h.device), h.to('cpu')\n",
        # A module calling its own method (tacotron2's STFT), not `Tensor.inverse`.
        "import torch\nclass STFT(torch.nn.Module):\n    def inverse(self, mag, phase):\n        return mag * phase\n"
        "    def forward(self, x):\n        return self.inverse(x, x)\n",
        "import numpy as np\nimport torch\na = np.zeros(3)\nv = a.tolist()\n",
        "import torch\nn = len(xs)\nv = float(n)\n",
        "import torch\nx = torch.zeros(3)\nprint(x.shape)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.to('cuda')\n",
        "import torch\nmodel = torch.nn.Linear(2, 2)\nmodel.cpu()\n",
        "import torch\ndef f(x: torch.Tensor):\n    return float(x.shape[0])\n",
        "import torch\ndef f(x: torch.Tensor):\n    print(f'{x.dtype}')\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x.dim() != 2:\n        raise ValueError(f'bad {x.max().item()}')\n",
        "import torch\ndef f(x: torch.Tensor):\n    assert x.dim() == 2, f'bad {x}'\n",
        "import torch\ndef median(values):\n    d = torch.tensor(list(values))\n    return d.median().item()\n",
        "import torch\nclass Boxes(torch.utils.data.Dataset):\n    def __getitem__(self, i):\n"
        "        return int(self.sizes[i].sum())\n",
        "import numpy as np\nimport torch\ndef f(stats):\n    return stats.tolist()\n",
        "import torch\ndef forward(self, x: torch.Tensor):\n    return x.numpy()\n",
        # `.numpy()` gives an array (faster-rcnn's `nms_cpu`): what follows reads the host.
        "import torch\ndef f(dets):\n    dets = dets.numpy()\n    order = dets[:, 4].argsort()[::-1]\n    return order.item(0)\n",
        "import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x.add_(y, alpha=0.5)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return torch.arange(x.shape[0], device=x.device)\n",
        "import torch\ndef f(x: torch.Tensor, n: int):\n    return x.view(n, -1).view(torch.float16).topk(x.size(0))\n",
        "import torch\ndef f(x: torch.Tensor, pinned: bool):\n    return x.to('cpu', non_blocking=True), x.to('cpu', non_blocking=pinned)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu', torch.float32, True)\n",
        "import torch\ndef f(x: torch.Tensor, cpu_buffer: torch.Tensor):\n    return x.to(cpu_buffer, True)\n",
        "import torch\ndef f(xs: list[torch.Tensor], t: torch.Tensor):\n    torch._foreach_mul_(xs, t)\n"
        "    torch._foreach_add_(xs, t, alpha=1.0)\n",
        "import torch\nclass Down(torch.nn.Module):\n    def forward(self, x: torch.Tensor):\n        return self.expand(x)\n",
        "import torch\ndef f(x: torch.Tensor):\n    shape = torch.onnx.operators.shape_as_tensor(x)\n"
        "    bsz, seq_len = shape[0], shape[1]\n    return x.view(bsz.view(1), seq_len, -1)\n",
    )
    INVALID = (
        Invalid("import torch\ndef f(loss: torch.Tensor):\n    return loss.item()\n", 3, 12),
        Invalid(
            "import torch\ndef train(model, loader):\n    total = 0.0\n    for x in loader:\n        loss = model(x).mean()\n        total += loss.item()\n    return total\n", 6, 18,
            "import torch\ndef train(model, loader):\n    total = 0.0\n    for x in loader:\n        loss = model(x).mean()\n        total += loss.detach().double().reshape(())\n    total = float(total)\n    return total\n",
        ),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.detach().cpu().numpy()\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu')\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu', non_blocking=False)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.to('cpu', torch.float32, False)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor, cpu_buffer: torch.Tensor):\n    return x.to(cpu_buffer, False, True)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return float(x.sum())\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    print(x)\n", 3, 11),
        Invalid("import torch\ndef f(x: torch.Tensor, n: torch.Tensor):\n    return x[:n]\n", 3, 15),
        Invalid("import math\nimport torch\ndef f(x: torch.Tensor):\n    return math.sqrt(x.sum())\n", 4, 12),
        Invalid("import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n    return torch.equal(a, b)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return f'{x.mean()}'\n", 3, 15),
        Invalid("import torch\nm = torch.zeros(3, device='cuda')\ns = ('%11s' * 2 + '%g') % ('a', 'b', *m)\n", 3, 39),
        Invalid("import torch\ndef f(x: torch.Tensor, y: torch.Tensor, lr: torch.Tensor):\n    x.add_(y, alpha=lr)\n", 3, 21),
        Invalid("import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n    return torch.tensor([a.sum(), b.sum()])\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor, n: torch.Tensor):\n    return torch.arange(n.sum(), device=x.device)\n", 3, 25),
        Invalid("import torch\ndef f(x: torch.Tensor, n: torch.Tensor):\n    return x.new_zeros((n.max(), 4))\n", 3, 25),
        Invalid("import torch\ndef f(xs: list[torch.Tensor], t: torch.Tensor):\n    torch._foreach_add_(xs, t)\n", 3, 29),
        Invalid("import torch\ndef f(x: torch.Tensor, mask: torch.Tensor):\n    return x.topk(mask.sum())\n", 3, 19),
    )

    # -- method and function calls ----------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not node.args:
            return  # ``t.numpy()`` raises on a device tensor: alone, it proves ``t`` is on the host
        if isinstance(func, cst.Attribute) and self._already_on_host(func.value):
            return
        match = match_sync_call(self.context, node, self.code)
        if match is not None and match.op.condition is SyncCondition.TENSOR_AS_NUMBER:
            match = None  # only some arguments are read back: decided below
            if not _called_on_self(node):  # ``self.expand(x)``: a submodule named like the method
                self._check_number_arguments(node)
        if match is not None:
            if match.op is _DEVICE_TO_HOST and not self._waits_for_copy_to_host(node, match.is_method):
                return
            self.report(node, self.sync_message(match.display, match.op), None if match.helper else self.propose_fix(node))
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "to":
            if (
                self._waits_for_copy_to_host(node, True) and receiver_is_tensor(self.context, func.value, "to")
                and not self.context.on_host(func.value)  # host to host: no copy from a device
            ):
                self.report(node, self.sync_message("`.to('cpu')`", _DEVICE_TO_HOST))
            return
        alpha = keyword(node, "alpha")
        if alpha is not None and self.context.is_device_tensor(alpha.value):
            # ``x.add_(y, alpha=lr)``: alpha is a Python scalar, so a tensor is read back first
            self.report(alpha.value, self.sync_message("A tensor passed as `alpha=`", _READBACK))
        if isinstance(func, cst.Name) and func.value in _CONVERSIONS | _FORMATTERS:
            if self.context.imports.qualify(func) is None:
                self._check_builtin(func.value, node)
            return
        qualified = self.context.qualify(func)
        if (qualified in ("torch.tensor", "torch.as_tensor") or qualified in _LEGACY_CONSTRUCTORS) and node.args:
            data = node.args[0].value
            if isinstance(data, (cst.List, cst.Tuple)) and any(
                self.context.is_device_tensor(element.value) for element in data.elements
            ):
                self.report(node, self.sync_message(f"`{qualified}` of a list of tensors", _READBACK))
                return
        if qualified is not None and qualified.startswith("math.") and node.args:
            if self.context.is_device_tensor(node.args[0].value):
                self.report(node, self.sync_message(f"`{qualified}` of a tensor", _READBACK))

    def _check_number_arguments(self, node: cst.Call) -> None:
        """``torch.arange(n.sum())``, ``torch._foreach_lerp_(a, b, w)`` with a 0-d tensor ``w``: the
        signature takes a Python number there, so the tensor is read back (``.item()``) before
        the op is even queued (``catalogue.NUMBER_ARGUMENTS`` says which arguments)."""
        qualified = self.context.qualify(node.func)
        receivers = 1 if qualified is not None and qualified.startswith("torch.Tensor.") else 0  # ``torch.Tensor.new_zeros(x, n)``
        if qualified is None and isinstance(node.func, cst.Attribute):
            qualified = f"torch.Tensor.{node.func.attr.value}"  # ``x.new_zeros(n)``: matched as a method
        spec = number_arguments(qualified or "")
        if spec is None:
            return
        display = f"`{qualified}`" if not qualified.startswith("torch.Tensor.") else f"`.{qualified[13:]}()`"
        for argument in _number_arguments(node, spec, receivers):
            if self.context.is_device_tensor(argument):
                self.report(argument, self.sync_message(f"A tensor passed as a number to {display}", by_function(qualified)))

    def _already_on_host(self, receiver: cst.BaseExpression) -> bool:
        """`x.cpu().numpy()`: only the first read-back in a chain syncs."""
        while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
            method = receiver.func.attr.value
            if method in _READBACK_METHODS or (method == "to" and self._moves_to_host(receiver, True)):
                return True
            receiver = receiver.func.value
        return False

    def _waits_for_copy_to_host(self, call: cst.Call, is_method: bool) -> bool:
        return self._moves_to_host(call, is_method) and not _copies_without_waiting(call)

    def _moves_to_host(self, call: cst.Call, is_method: bool) -> bool:
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "cpu":
            return True
        device = keyword(call, "device")
        candidates = [device.value] if device else [a.value for a in positional(call)[:1]]
        return any(_is_cpu_device(c) for c in candidates)

    def _check_builtin(self, name: str, node: cst.Call) -> None:
        args = positional(node)
        if not args:
            return
        if name in _FORMATTERS:
            for arg in args:
                if self.context.is_device_tensor(arg.value):
                    self.report(arg.value, self.sync_message(f"`{name}()` of a tensor", _READBACK))
            return
        if self.context.is_device_tensor(args[0].value):
            self.report(node, self.sync_message(f"`{name}(tensor)`", _READBACK))

    # -- tensors where Python needs a number ----------------------------------------
    def visit_Slice(self, node: cst.Slice) -> None:
        for bound in (node.lower, node.upper, node.step):
            if bound is not None and self.context.is_device_tensor(bound):
                self.report(bound, self.sync_message("A tensor used as a slice bound", _READBACK))

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """``"%.4g" % loss`` and ``fmt % (*mloss, lr)``: %-formatting reads values back."""
        if not (isinstance(node.operator, cst.Modulo) and _is_text(node.left)):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        for value in values:
            if self.context.is_device_tensor(value):
                self.report(value, self.sync_message("%-formatting a tensor", _READBACK))

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression) -> None:
        if self.context.is_device_tensor(node.expression):
            self.report(node.expression, self.sync_message("Formatting a tensor in an f-string", _READBACK))

    def leave_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "range":
            for arg in node.args:
                if self.context.is_device_tensor(arg.value):
                    self.report(arg.value, self.sync_message("A tensor passed to `range()`", _READBACK))
