from __future__ import annotations

import libcst as cst

from synclint.catalogue import ops_for
from synclint.rules.base import Invalid, Rule

(_SYNCHRONIZE,) = ops_for("SL501")


class ExplicitSync(Rule):
    """Flags `torch.cuda.synchronize()`, stream/event `.synchronize()` and `empty_cache()` in hot code.

    ## What it does
    Finds explicit device synchronisation — `torch.cuda.synchronize()`,
    `stream.synchronize()`, `event.synchronize()`, `torch.cuda.empty_cache()`
    — inside loops, `forward`, losses and training steps.

    ## Why is this bad?
    It drains the whole device queue and leaves the CPU idle until it is
    empty, then the GPU idles while the CPU queues the next kernels. Timing
    code often leaves such calls behind (the seed's profiling loop has three
    per step). `empty_cache()` also synchronises, and makes the caching
    allocator call `cudaMalloc` again.

    ## Example
    ```python
    for step, batch in enumerate(loader):
        loss = train_step(batch)
        torch.cuda.synchronize()
    ```

    ## Use instead
    Remove it from the hot path. To time GPU work, record
    `torch.cuda.Event(enable_timing=True)` pairs and read them once at the
    end, or use the profiler.

    ## Fix safety
    No automatic fix: a synchronize is sometimes load-bearing (benchmarks,
    multi-stream code).
    """

    code = "SL501"
    name = "explicit-sync"
    TOKENS = frozenset({"torch"})  # see synclint.prefilter

    VALID = (
        "import torch\ntorch.cuda.synchronize()\n",
        "import torch\ndef setup():\n    torch.cuda.empty_cache()\n",
        "import torch\nfor i in range(3):\n    barrier.wait()\n",
        "import threading\nfor i in range(3):\n    lock.synchronize()\n",
        "import torch\ndef forward(self, x):\n    return x\n",
        "import torch\nfor i in range(3):\n    torch.cuda.Event(enable_timing=True)\n",
    )
    INVALID = (
        Invalid("import torch\nfor i in range(3):\n    torch.cuda.synchronize()\n", 3, 5),
        Invalid("import torch\nfor i in range(3):\n    torch.cuda.synchronize(device)\n", 3, 5),
        Invalid("import torch\nfor i in range(3):\n    torch.cuda.empty_cache()\n", 3, 5),
        Invalid("import torch\nfor i in range(3):\n    end.synchronize()\n", 3, 5),
        Invalid("import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n        torch.cuda.current_stream().synchronize()\n        return x\n", 4, 9),
        Invalid("from torch import cuda\ndef training_step(b):\n    cuda.synchronize()\n", 3, 5),
    )

    def visit_Call(self, node: cst.Call) -> None:
        if not self.context.is_hot or not self.context.imports.imports_torch:
            return
        qualified = self.context.qualify(node.func)
        if qualified in _SYNCHRONIZE.functions:
            what = f"`{qualified}()`"
        elif (
            qualified is None or qualified.startswith("torch.")
        ) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "synchronize" and not node.args:
            what = "`.synchronize()`"
        else:
            return
        self.report(node, self.sync_message(what, _SYNCHRONIZE))
