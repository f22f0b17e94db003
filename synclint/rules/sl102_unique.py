from __future__ import annotations

import libcst as cst

from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call


class Unique(Rule):
    """Flags `torch.unique`, `Tensor.unique` and `unique_consecutive`.

    ## What it does
    Finds calls that return the distinct values of a tensor.

    ## Why is this bad?
    The number of distinct values decides the output shape, so the host must
    wait for the device before it can allocate the result or queue the next
    kernel. In the seed segmentation loss, replacing `torch.nonzero` alone did
    not help: the stall simply moved to `torch.unique`.

    ## Example
    ```python
    unique = torch.unique(target)
    ignore_loss = torch.numel(unique) < 2
    ```

    ## Use instead
    When only the number of distinct values is needed, sort and count the steps
    on the device:
    ```python
    sorted_target, _ = torch.sort(target.flatten())
    num_unique = torch.count_nonzero(sorted_target[1:] != sorted_target[:-1]) + 1
    ```
    For a histogram over known classes, use `torch.zeros(C).scatter_add_(...)`.

    ## Fix safety
    A unique result used only for its count becomes the sort + step count
    (`+ min(s.numel(), 1)`, a shape read, keeps an empty input at 0): unsafe,
    the count is a 0-d tensor, and NaNs count once each. Offered only where the
    count meets a tensor or is only tested for truth (also through one name):
    a count that is returned, stored, formatted or used as a key or shape
    (pytorch_geometric's `contains_isolated_nodes` returned a tensor) gets no fix.
    """

    syncs_every_call = True

    code = "SL102"
    device_sync = True
    name = "unique"
    TOKENS = frozenset({"unique"})  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        "import torch\ns, _ = torch.sort(t.flatten())\n",
        "import pandas as pd\nimport torch\ndf = pd.DataFrame()\nu = df['a'].unique()\n",
        "import numpy as np\nu = np.unique(a)\n",
        "import numpy as np\nimport torch\nu = np.asarray(a).unique()\n",
        "labels = set(xs)\nu = len(labels)\n",
        "import numpy as np\nimport torch\nu = arr.unique()\n",
    )
    INVALID = (
        Invalid("import torch\nu = torch.unique(t)\n", 2, 5),
        Invalid("import torch as T\nu = T.unique(t, return_counts=True)\n", 2, 5),
        Invalid("from torch import unique\nu = unique(t)\n", 2, 5),
        Invalid("import torch\ndef f(t: torch.Tensor):\n    return t.unique()\n", 3, 12),
        Invalid("import torch\nu = torch.unique_consecutive(t)\n", 2, 5),
        Invalid("import torch\ndef f(x):\n    return (x.float() > 0).unique_consecutive()\n", 3, 12),
        Invalid('import torch\ndef f(t: torch.Tensor):\n    unique = torch.unique(t)\n    return torch.numel(unique) < 2\n', 3, 14, None),
        Invalid("import torch\ndef f(t: torch.Tensor):\n    unique = torch.unique(t)\n    degenerate = torch.numel(unique) < 2\n    if degenerate:\n        t = t * 0\n    return t\n", 3, 14,
                "import torch\ndef f(t: torch.Tensor):\n    sorted_t = torch.sort(t.flatten()).values\n    degenerate = torch.count_nonzero(sorted_t[1:] != sorted_t[:-1]) + min(sorted_t.numel(), 1) < 2\n    if degenerate:\n        t = t * 0\n    return t\n"),
    )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is not None:
            self.report(node, self.sync_message(match.display, match.op), None if match.helper else self.propose_fix(node))
