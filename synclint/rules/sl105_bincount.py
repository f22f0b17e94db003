from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.catalogue import SyncCondition
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call


class Bincount(Rule):
    """Flags `torch.bincount`, `Tensor.bincount` and `one_hot` without `num_classes`.

    ## What it does
    Finds histogram counts computed with `bincount`, and
    `torch.nn.functional.one_hot` calls that do not pass `num_classes`.

    ## Why is this bad?
    `bincount` sizes its output as `max(input.max() + 1, minlength)`, so it
    reads the maximum back to the host on every call, even when `minlength`
    already covers every value. `one_hot` without `num_classes` does the same
    to size its last dimension.

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
    `bincount(x, minlength=K)` without weights becomes
    `torch.zeros(K, dtype=torch.int64, device=x.device).scatter_add_(0, x.long(), torch.ones_like(x, dtype=torch.int64))`
    (unsafe) only when every binding of the name `x` bounds its values to
    `[0, K)` with the same `K` (`e % K`, `e.clamp(0, K - 1)`): values outside
    would raise in `scatter_add_` where `bincount` grew the output. Otherwise no
    fix, and the message says why.
    """

    syncs_every_call = True

    code = "SL105"
    device_sync = True
    name = "bincount"
    TOKENS = frozenset({"bincount", "one_hot"})  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        "import numpy as np\nc = np.bincount(a)\n",
        "import torch\nc = torch.zeros(10).scatter_add_(0, i, v)\n",
        "import torch\nc = torch.histc(x, bins=10)\n",
        "import numpy as np\nimport torch\nc = np.asarray(a).bincount()\n",
        "import torch\nc = counter.count(3)\n",
        "import collections\nc = collections.Counter(xs)\n",
        "import torch.nn.functional as F\nh = F.one_hot(labels, num_classes=10)\n",
        "import torch.nn.functional as F\nh = F.one_hot(labels, 10)\n",
    )
    INVALID = (
        Invalid("import torch\nc = torch.bincount(labels)\n", 2, 5),
        Invalid("import torch\nc = torch.bincount(labels, minlength=10)\n", 2, 5),
        Invalid(
            "import torch\ndef f(y: torch.Tensor, k: int):\n    labels = y.long() % k\n    return torch.bincount(labels, minlength=k)\n", 4, 12,
            "import torch\ndef f(y: torch.Tensor, k: int):\n    labels = y.long() % k\n    return torch.zeros(k, dtype=torch.int64, device=labels.device).scatter_add_(0, labels.long(), torch.ones_like(labels, dtype=torch.int64))\n",
        ),
        Invalid("import torch as T\nc = T.bincount(labels, weights=w)\n", 2, 5),
        Invalid("from torch import bincount\nc = bincount(labels)\n", 2, 5),
        Invalid("import torch\ndef f(y: torch.Tensor):\n    return y.bincount()\n", 3, 12),
        Invalid("import torch\ndef f(y):\n    return y.long().bincount(minlength=3)\n", 3, 12),
        Invalid("import torch.nn.functional as F\nh = F.one_hot(labels)\n", 2, 5),
        Invalid("import torch\nh = torch.nn.functional.one_hot(labels, num_classes=-1)\n", 2, 5),
    )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is None:
            return
        if match.op.condition is SyncCondition.NO_NUM_CLASSES and self._has_num_classes(node):
            return
        self.report(node, self.sync_message(match.display, match.op), None if match.helper else self.propose_fix(node))

    @staticmethod
    def _has_num_classes(node: cst.Call) -> bool:
        """``one_hot(x, C)`` / ``one_hot(x, num_classes=C)`` with ``C`` other than -1."""
        given = keyword(node, "num_classes")
        args = positional(node)
        value = given.value if given is not None else (args[1].value if len(args) > 1 else None)
        if value is None:
            return False
        return not (
            isinstance(value, cst.UnaryOperation)
            and isinstance(value.expression, cst.Integer)
            and value.expression.value == "1"
        )
