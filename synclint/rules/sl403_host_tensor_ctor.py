from __future__ import annotations

import libcst as cst

from synclint.analysis.batch_derivation import VIEWS
from synclint.analysis.devices import LIKE_FACTORIES, empty_construction
from synclint.analysis.inference import asks_not_to_block, keyword
from synclint.analysis.kinds import Kind
from synclint.catalogue import entry
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import is_host_transfer

_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "rand", "randn", "randint", "arange", "linspace", "eye",
     "tensor", "as_tensor", *LIKE_FACTORIES}
)


_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "bool"})
_FROM_DATA = entry("SL403", "tensor from host data on the device")


def _is_accelerator(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return isinstance(value, str) and value != "cpu" and not value.startswith("cpu")
    return not (isinstance(node, cst.Name) and node.value == "None")


def _python_data(node: cst.BaseExpression, context=None) -> bool:
    """Python numbers: literals, names known to hold Python values, lists of them."""
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return True
    if context is not None and not isinstance(node, (cst.List, cst.Tuple)):
        return context.kind_of(node) is Kind.PYTHON
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _python_data(node.expression, context)
    if isinstance(node, (cst.List, cst.Tuple)):
        return bool(node.elements) and all(_python_data(e.value, context) for e in node.elements)
    return False


class HostTensorCtor(Rule):
    """Flags tensors built on the host and copied to the device in hot code.

    ## What it does
    Finds, in code that runs every step (what the project's call graph reaches
    from `forward`, a loss, a training step or a loop over batches, and loop
    bodies): `torch.tensor(<python data>, device=<accelerator>)`, factories
    whose result is immediately moved (`torch.zeros(n).cuda()`,
    `torch.tensor(x).to(device)`, also after a cast: `.float().to(device)`), and moves of tensors known to be built on
    the host (`idx = torch.arange(n)` ... `idx.to(x.device)`), indexing a
    device tensor with such a host tensor (`x[idx]`) or writing one into it
    (`x[:k] = host_values`): both copy it to the device first. Hotness comes
    from the call graph, not from function names: a grad-norm helper called
    from the training loop is hot, a `build_*` or `__init__` is not. In hot
    code the data argument need not be proven Python: anything not known to be
    a device tensor is copied from the host. `torch.zeros_like(x)` is made
    where `x` lives, so moving it is an upload only when `x` is on the host; a
    move whose destination is the CPU or the device of a host tensor
    (`.to(h.device)`, `.to(h)`) uploads nothing. A loader batch converted on the host
    (`x = x.float()`, `x.permute(0, 3, 1, 2).contiguous()`) and copied with `non_blocking=True` is reported too:
    a conversion that changes anything makes a new tensor in pageable memory, whose copy
    blocks anyway (move first, convert on the device); its blocking copy is SL401's, and a
    view of a batch (`x.unsqueeze(1)`) is the loader's pinned memory. A tensor built visibly empty
    (`torch.Tensor([])`, `torch.zeros(0, 4)`, casts of them) is left alone:
    copying no elements launches nothing and waits for nothing (ATen's
    `copy_` returns first). Only where it is empty on every path to the move:
    one bound empty in a branch that may not run, bound again later in a loop
    around the move (the next pass moves that) or grown in place
    (`x.resize_(n)`, `torch.cat(..., out=x)`) is moved as any other.

    ## Why is this bad?
    The data is materialised in pageable host memory and copied with a
    synchronous host-to-device transfer, every time the line runs.

    ## Example
    ```python
    zero = torch.tensor(0.0, device=pred.device)
    offsets = torch.arange(n).cuda()
    ```

    ## Use instead
    ```python
    zero = torch.zeros((), device=pred.device)
    offsets = torch.arange(n, device="cuda")
    ```

    ## Fix safety
    Literal zeros and scalars become `torch.zeros` / `torch.full` on the
    device, and factory-then-move becomes the factory with `device=`: safe,
    the values, dtype and device are the same. Random factories are the
    exception (unsafe): the device generator draws different numbers. No fix
    when a float literal is beyond bfloat16/float32's range (`torch.tensor(1e39)`
    is inf, `torch.full((), 1e39)` raises), when the destination is not a device
    by how it was computed (a string, `torch.device(...)`, `tensor.device`, a
    name bound only to those; not `std_dev` or `dev_dtype` by their spelling),
    when the factory passes `requires_grad` or `pin_memory`, or when `torch` is
    shadowed where the new call would run.
    """

    code = "SL403"
    name = "host-tensor-ctor"
    TOKENS = frozenset({"torch", ".to", ".cuda"})  # see synclint.prefilter (a batch converted and moved need not say torch)
    fix_applicability = "safe"

    VALID = (
        # Empty accumulators (retinanet's post-processing): nothing is copied.
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        scores = torch.Tensor([])\n"
        "        return scores.cuda(), torch.zeros(0, 4).to(x.device)\n",
        "import torch\nzero = torch.tensor(0.0, device='cuda')\n",
        "import torch\ndef forward(self, x):\n    return torch.zeros((), device=x.device)\n",
        "import torch\ndef forward(self, x):\n    return torch.tensor(x, device='cpu')\n",
        "import torch\nclass M(torch.nn.Module):\n    def __init__(self, w):\n        self.w = torch.tensor(0.5, device=w.device)\n",
        "import torch\nfor i in range(3):\n    z = torch.zeros(3, device='cuda')\n",
        "import torch\nfor i in range(3):\n    z = torch.tensor(values)\n",
        "import torch\nfor i in range(3):\n    z = torch.zeros(3).to(torch.float16)\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        idx = torch.arange(4, device=x.device)\n        return x[idx]\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        c = x.cpu()\n        idx = torch.arange(4)\n        return c[idx]\n",
        # Made where `labels` lives (the device): moving it again copies nothing.
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x, labels):\n        return torch.zeros_like(labels).to(labels.device)\n",
        # The destination is the device of a host tensor: a CPU-to-CPU move.
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        var = torch.bernoulli(torch.tensor(0.5))\n"
        "        return torch.equal(var, torch.tensor(1.0).to(var.device)), torch.ones(2).to(var)\n",
        # A view of a pinned loader batch is pinned memory: its non-blocking copy does not wait.
        "import torch\nfor x, y in loader:\n    x = x.unsqueeze(1)\n    x = x.cuda(non_blocking=True)\n",
        # A blocking copy of a converted batch is the loader's copy: SL401 reports it.
        "import torch\nfor x, y in loader:\n    x = x.float()\n    x = x.cuda()\n",
    )
    INVALID = (
        Invalid("import torch\nfor b in range(3):\n    z = torch.tensor(0.0, device='cuda')\n", 3, 9, "import torch\nfor b in range(3):\n    z = torch.zeros((), device='cuda')\n"),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return torch.tensor(1.5, device=x.device)\n", 4, 16, "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return torch.full((), 1.5, device=x.device)\n"),
        Invalid("import torch\nfor b in range(3):\n    z = torch.zeros(4).cuda()\n", 3, 9, "import torch\nfor b in range(3):\n    z = torch.zeros(4, device='cuda')\n"),
        Invalid("import torch\ndef loss_fn(p, t):\n    return torch.arange(4).to(p.device)\n", 3, 12, None),
        Invalid("import torch\nfor b in range(3):\n    z = torch.tensor([1, 2], device=dev)\n", 3, 9, None),
        Invalid("import torch\ndef loss_fn(p, t):\n    n = len(t)\n    return torch.as_tensor([n], dtype=torch.float, device=p.device)\n", 4, 12, None),
        Invalid("import torch\ndef decode(rel_codes, boxes):\n    c = torch.tensor(0.5, dtype=boxes.dtype, device=boxes.device)\n", 3, 9, "import torch\ndef decode(rel_codes, boxes):\n    c = torch.full((), 0.5, dtype=boxes.dtype, device=boxes.device)\n"),
        Invalid("import torch as T\nfor b in range(3):\n    z = T.ones(2, 2).to(device=dev)\n", 3, 9, None),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        idx = torch.arange(4)\n        return idx.to(x.device)\n", 5, 16, None),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        return [torch.tensor(s, device=x.device) for s in self.scales]\n", 4, 17, None),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        idx = torch.arange(4)\n        return x[idx]\n", 5, 16, None),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        v = torch.zeros(4)\n        x[:4] = v\n        return x\n", 5, 9, None),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        h = torch.zeros(4)\n        return torch.randn_like(h).to(x.device)\n", 5, 16,
                "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        h = torch.zeros(4)\n        return torch.randn_like(h, device=x.device)\n"),
        # A loader batch converted on the host (float64 images cast to float32) is a new
        # pageable tensor: even its non-blocking copy blocks.
        Invalid("import torch\nfor x, y in loader:\n    x = x.float()\n    x = x.cuda(non_blocking=True)\n", 4, 9),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        h = torch.zeros(4)\n        return torch.ones_like(h).to(x.device)\n", 5, 16,
                "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        h = torch.zeros(4)\n        return torch.ones_like(h, device=x.device)\n"),
    )

    # -- hidden host-to-device copies ------------------------------------------------------
    def _host_tensor_name(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and self.context.is_tensor(node) and self.context.on_host(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """``x[idx]`` with ``idx`` built on the host: the index is copied to the device first."""
        if not self.context.is_hot or len(node.slice) != 1:
            return
        index = node.slice[0].slice
        if not isinstance(index, cst.Index) or not self._host_tensor_name(index.value):
            return
        if self.context.is_device_tensor(node.value) and not self.context.on_host(node.value):
            self.report(
                node,
                f"Indexing with `{index.value.value}`, a tensor built in host memory, copies it to the "
                "device (a synchronous host-to-device copy) each time this line runs; build the index "
                f"on the device (`device=`){self.context.context_phrase()}",
            )

    def visit_Assign(self, node: cst.Assign) -> None:
        """``x[:, :k] = cpu_values``: writing a host tensor into a device tensor is an upload."""
        if not self.context.is_hot or len(node.targets) != 1 or not self._host_tensor_name(node.value):
            return
        target = node.targets[0].target
        if isinstance(target, cst.Subscript) and self.context.is_device_tensor(target.value) and not self.context.on_host(
            target.value
        ):
            self.report(
                node,
                f"Writing `{node.value.value}`, a tensor in host memory, into a device tensor is a "
                "synchronous host-to-device copy each time this line runs; build the values on the "
                f"device{self.context.context_phrase()}",
            )

    def _host_data(self, data: cst.BaseExpression) -> bool:
        """Python data, proven; in code the call graph makes hot, anything not known to
        be a device tensor (a loop variable over an attribute list, a ``Tuple[float, float]``
        element, a ``Union[Tensor, Number]``): every kind of it is copied from the host."""
        if _python_data(data, self.context):
            return True
        if not self.context.flow.index_context().is_hot:
            return False
        if isinstance(data, (cst.List, cst.Tuple)):
            return bool(data.elements) and not any(self.context.is_tensor(e.value) for e in data.elements)
        return isinstance(data, (cst.Name, cst.Attribute, cst.Subscript)) and not self.context.is_device_tensor(data)

    def visit_Call(self, node: cst.Call) -> None:
        qualified = self.context.qualify(node.func)
        if qualified in _FROM_DATA.functions:
            device = keyword(node, "device")
            # ``device=pred.device``: tensor-processing code, called per step even when
            # it is a helper outside any loop or ``forward`` (a box coder, a matcher).
            hot = self.context.is_hot or (
                device is not None and isinstance(device.value, cst.Attribute) and device.value.attr.value == "device"
            )
            if (
                hot and device is not None and _is_accelerator(device.value) and node.args
                and self._host_data(node.args[0].value) and not empty_construction(node, self.context.qualify)
            ):
                self.report(
                    node,
                    "Tensor built from Python data on the host and copied to the device each time "
                    "this line runs (a synchronous host-to-device copy); create constants on the "
                    "device (`torch.zeros`/`torch.full(..., device=...)`) and derive counts from "
                    f"device tensors{self.context.context_phrase()}",
                    self.propose_fix(node),
                )
            return
        if not self.context.is_hot or not is_host_transfer(node) or self.context.flow.devices.moves_to_host(node):
            return  # ``.to(h.device)`` of a host tensor ``h``: nothing crosses to a device
        inner = node.func.value  # type: ignore[union-attr]
        if (
            isinstance(inner, cst.Name)
            and self.context.is_tensor(inner)
            and self.context.on_host(inner)
            and not self.context.flow.is_loader_batch(inner.value)  # moving a batch: SL401's business
        ):
            if self.context.flow.holds_an_empty_tensor(inner.value):
                return  # ``torch.Tensor([]).cuda()``: no elements, no copy, no wait
            derived = self.context.flow.batch_derivation(inner)
            if derived in VIEWS:
                return  # a view of a loader's batch is the loader's memory: its copy is SL401's
            if derived is not None:
                if not asks_not_to_block(node):
                    return  # a blocking copy of a loader's batch, converted or not: SL401's
                self.report(
                    node,
                    f"`{inner.value}` is a loader batch converted on the host (`.{derived}()`): unless "
                    "the conversion returned the batch itself, it is a new tensor in pageable memory, "
                    "and its copy blocks the host even with `non_blocking=True`; move the batch first "
                    f"and convert it on the device{self.context.context_phrase()}",
                )
                return
            self.report(
                node,
                f"`{inner.value}` lives in host memory (built without a device), so moving it is a "
                "synchronous host-to-device copy each time this line runs; create it on the device "
                f"(`device=`) or once, outside the step{self.context.context_phrase()}",
            )
            return
        cast = False
        # ``torch.tensor(v).float().to(device)``: a dtype cast in between still runs on the host.
        while (
            isinstance(inner, cst.Call)
            and isinstance(inner.func, cst.Attribute)
            and inner.func.attr.value in _CASTS
            and not inner.args
        ):
            inner, cast = inner.func.value, True
        if not isinstance(inner, cst.Call) or empty_construction(inner, self.context.qualify):
            return  # ``torch.zeros(0, 4).cuda()`` copies nothing
        inner_name = self.context.qualify(inner.func)
        if inner_name is None or not inner_name.startswith("torch."):
            return
        factory = inner_name.rsplit(".", 1)[1]
        if factory in LIKE_FACTORIES and not self.context.on_host(inner):
            return  # ``torch.zeros_like(labels)`` lives where ``labels`` does: on the device, no copy
        if factory in _FACTORIES and keyword(inner, "device") is None:
            self.report(
                node,
                "Factory tensor created on the host and then moved: the move is a synchronous "
                f"host-to-device copy; pass `device=` to the factory{self.context.context_phrase()}",
                None if cast else self.propose_fix(node),
            )
