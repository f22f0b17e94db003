from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword
from synclint.rules.base import Invalid, Rule

_HOST_SOURCES = frozenset(
    {"torch.from_numpy", "torch.tensor", "torch.as_tensor", "torch.zeros", "torch.ones",
     "torch.empty", "torch.full", "torch.rand", "torch.randn", "torch.randint", "torch.arange",
     "torch.stack", "torch.cat"}
)


class PageableNonBlocking(Rule):
    """Flags `non_blocking=True` copies whose source is a fresh pageable host tensor.

    ## What it does
    Finds `.to(device, non_blocking=True)`, `.cuda(non_blocking=True)` and
    `dst.copy_(src, non_blocking=True)` where the source was just created on
    the host (`torch.from_numpy(...)`, `torch.tensor(...)`, a factory without
    `device=`), and so sits in pageable memory.

    ## Why is this bad?
    CUDA can only copy asynchronously from pinned memory. From pageable
    memory, `non_blocking=True` silently degrades to a synchronous copy, so
    the code looks asynchronous and is not. (A device-to-host
    `non_blocking=True` copy into pageable memory may even be read before it
    has arrived.)

    ## Example
    ```python
    x = torch.from_numpy(array).to(device, non_blocking=True)
    ```

    ## Use instead
    ```python
    x = torch.from_numpy(array).pin_memory().to(device, non_blocking=True)
    # or build it on the device: torch.as_tensor(array, device=device)
    ```

    ## Fix safety
    No automatic fix: pinning costs host memory and a copy of its own.
    """

    code = "SL404"
    name = "pageable-non-blocking"
    hot_path_only = False
    TOKENS = frozenset({"non_blocking"})  # see synclint.prefilter

    VALID = (
        "import torch\nx = batch.to(device, non_blocking=True)\n",
        "import torch\nx = torch.from_numpy(a).pin_memory().to(device, non_blocking=True)\n",
        "import torch\nx = torch.from_numpy(a).to(device)\n",
        "import torch\nx = torch.zeros(3, device='cuda').to(d, non_blocking=True)\n",
        "import torch\nh = torch.empty(3, pin_memory=True)\nx = h.to(d, non_blocking=True)\n",
        # A cast stays where the tensor lives: no copy to the device.
        "import torch\nx = torch.from_numpy(a).to(torch.float32, non_blocking=True)\n",
        "import torch\ndst.copy_(pinned, non_blocking=True)\n",
    )
    INVALID = (
        Invalid("import torch\nx = torch.from_numpy(a).to(device, non_blocking=True)\n", 2, 5),
        Invalid("import torch\nx = torch.tensor(values).cuda(non_blocking=True)\n", 2, 5),
        Invalid("import torch\nh = torch.from_numpy(a)\nx = h.to(device, non_blocking=True)\n", 3, 5),
        Invalid("import torch\ndst.copy_(torch.from_numpy(a), non_blocking=True)\n", 2, 1),
        Invalid("import torch as T\nx = T.zeros(4).to('cuda', non_blocking=True)\n", 2, 5),
        Invalid("import torch\ndef f(a):\n    t = torch.as_tensor(a)\n    return t.to('cuda:0', non_blocking=True)\n", 4, 12),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._fresh: list[set[str]] = [set()]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._fresh.append(set())

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._fresh.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        fresh = self._is_fresh_host_tensor(node.value)
        for target in node.targets:
            if isinstance(target.target, cst.Name):
                (self._fresh[-1].add if fresh else self._fresh[-1].discard)(target.target.value)

    def _is_fresh_host_tensor(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self._fresh[-1]
        if not isinstance(node, cst.Call):
            return False
        qualified = self.context.qualify(node.func)
        if qualified not in _HOST_SOURCES:
            return False
        device = keyword(node, "device")
        pinned = keyword(node, "pin_memory")
        return device is None and not (pinned is not None and getattr(pinned.value, "value", "") == "True")

    def visit_Call(self, node: cst.Call) -> None:
        flag = keyword(node, "non_blocking")
        if flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "True"):
            return
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        method = func.attr.value
        if method == "to" and self.context.flow.devices.casts_only(node):
            return  # ``x.to(torch.half, non_blocking=True)``: a cast where ``x`` lives, no copy
        if method in ("to", "cuda"):
            source = func.value
        elif method == "copy_" and node.args and node.args[0].keyword is None:
            source = node.args[0].value
        else:
            return
        if self._is_fresh_host_tensor(source):
            self.report(
                node,
                "`non_blocking=True` copy from a fresh pageable host tensor silently runs "
                "synchronously; `.pin_memory()` the source first or create it on the device"
                f"{self.context.context_phrase()}",
            )
