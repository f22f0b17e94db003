from __future__ import annotations

import libcst as cst

from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call


class Bincount(Rule):
    """Flags `torch.bincount` and `Tensor.bincount`.

    ## What it does
    Finds histogram counts computed with `bincount`.

    ## Why is this bad?
    `bincount` sizes its output as `max(input.max() + 1, minlength)`, so it
    reads the maximum back to the host on every call, even when `minlength`
    already covers every value.

    ## Example
    ```python
    counts = torch.bincount(labels, minlength=num_classes)
    ```

    ## Use instead
    ```python
    counts = torch.zeros(num_classes, dtype=torch.long, device=labels.device)
    counts.scatter_add_(0, labels, torch.ones_like(labels))
    ```

    ## Fix safety
    No automatic fix: the static size must be known to the code (values outside
    it would raise instead of growing the output).
    """

    code = "SL105"
    name = "bincount"
    TOKENS = frozenset({"bincount"})  # see synclint.prefilter

    VALID = (
        "import numpy as np\nc = np.bincount(a)\n",
        "import torch\nc = torch.zeros(10).scatter_add_(0, i, v)\n",
        "import torch\nc = torch.histc(x, bins=10)\n",
        "import numpy as np\nimport torch\nc = np.asarray(a).bincount()\n",
        "import torch\nc = counter.count(3)\n",
        "import collections\nc = collections.Counter(xs)\n",
    )
    INVALID = (
        Invalid("import torch\nc = torch.bincount(labels)\n", 2, 5),
        Invalid("import torch\nc = torch.bincount(labels, minlength=10)\n", 2, 5),
        Invalid("import torch as T\nc = T.bincount(labels, weights=w)\n", 2, 5),
        Invalid("from torch import bincount\nc = bincount(labels)\n", 2, 5),
        Invalid("import torch\ndef f(y: torch.Tensor):\n    return y.bincount()\n", 3, 12),
        Invalid("import torch\ndef f(y):\n    return y.long().bincount(minlength=3)\n", 3, 12),
    )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is not None:
            self.report(node, self.sync_message(match.display, match.op))
