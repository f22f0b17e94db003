from __future__ import annotations

import libcst as cst

from synclint.analysis.inference import keyword, positional
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call


class DynamicRepeat(Rule):
    """Flags `repeat_interleave` with tensor `repeats` and no `output_size`.

    ## What it does
    Finds `torch.repeat_interleave(x, repeats)`, `x.repeat_interleave(repeats)`
    and the one-argument form `torch.repeat_interleave(repeats)` where
    `repeats` is a tensor and `output_size=` is not given.

    ## Why is this bad?
    The output length is `repeats.sum()`, a value that lives on the device:
    PyTorch reads it back to allocate the result, stalling the host.

    ## Example
    ```python
    batch_index = torch.repeat_interleave(torch.arange(B, device=d), counts)
    ```

    ## Use instead
    ```python
    batch_index = torch.repeat_interleave(torch.arange(B, device=d), counts, output_size=total)
    ```
    where `total` is a Python int the host already knows (for example the
    padded size, or a count computed on the CPU side of the data loader).

    ## Fix safety
    Safe, and offered only where the host already knows the sum of `repeats`:
    `repeats` is `torch.bincount(v[, minlength=K])` without weights (the sum is
    `v.numel()`) or `torch.full((n,), k)` / `x.new_full((n,), k)` with an int
    literal `k` (the sum is `n * k`), directly or through a name bound once;
    `output_size=` is then passed and the values are the same. Otherwise the
    right `output_size` is knowledge the code must supply, and the message says so.
    """

    syncs_every_call = True

    code = "SL104"
    device_sync = True
    name = "dynamic-repeat"
    TOKENS = frozenset({"repeat_interleave"})  # see synclint.prefilter
    fix_applicability = "safe"

    VALID = (
        "import torch\ny = torch.repeat_interleave(x, 2)\n",
        "import torch\ny = torch.repeat_interleave(x, r, output_size=8)\n",
        "import torch\ndef f(x: torch.Tensor, n: int):\n    return x.repeat_interleave(n, dim=0)\n",
        "import torch\ny = x.repeat(2, 1)\n",
        "import numpy as np\ny = np.repeat(a, r)\n",
        "import torch\ndef f(x: torch.Tensor, r: torch.Tensor):\n    return x.repeat_interleave(r, output_size=16)\n",
    )
    INVALID = (
        Invalid("import torch\ndef f(x, r: torch.Tensor):\n    return torch.repeat_interleave(x, r)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor, r: torch.Tensor):\n    return x.repeat_interleave(r, dim=0)\n", 3, 12),
        Invalid("import torch\ndef f(counts: torch.Tensor):\n    return torch.repeat_interleave(counts)\n", 3, 12),
        Invalid("import torch as T\ndef f(x, c):\n    return T.repeat_interleave(x, T.bincount(c))\n", 3, 12),
        Invalid("from torch import repeat_interleave as ri\ndef f(x, r: 'torch.Tensor'):\n    return ri(x, repeats=r)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.repeat_interleave(x.long())\n", 3, 12),
        Invalid(
            "import torch\ndef f(batch: torch.Tensor, k: int):\n    counts = torch.bincount(batch, minlength=k)\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts)\n", 4, 12,
            "import torch\ndef f(batch: torch.Tensor, k: int):\n    counts = torch.bincount(batch, minlength=k)\n    return torch.repeat_interleave(torch.arange(k, device=batch.device), counts, output_size=batch.numel())\n",
        ),
    )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is None or keyword(node, "output_size") is not None:
            return
        args = positional(node)
        repeats_arg = keyword(node, "repeats")
        if repeats_arg is not None:
            repeats = repeats_arg.value
        elif match.is_method:
            repeats = args[0].value if args else None
        elif len(args) == 1:
            # torch.repeat_interleave(repeats): only tensors are accepted here.
            if not self.context.kind_of(args[0].value).is_host_array:
                self.report(node, self.sync_message(match.display, match.op), self.propose_fix(node))
            return
        else:
            repeats = args[1].value if len(args) > 1 else None
        if repeats is not None and self.context.is_tensor(repeats):
            self.report(node, self.sync_message(f"{match.display} with tensor repeats", match.op), self.propose_fix(node))
