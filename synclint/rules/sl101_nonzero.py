from __future__ import annotations

import libcst as cst

from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call


class Nonzero(Rule):
    """Flags `torch.nonzero`, `Tensor.nonzero`, `argwhere`, single-argument `torch.where` and NMS.

    ## What it does
    Finds calls whose output shape is the number of non-zero elements of a
    tensor: `torch.nonzero(x)`, `x.nonzero()`, `torch.argwhere(x)` and
    `torch.where(cond)` with one argument (which is `nonzero(as_tuple=True)`);
    and torchvision's non-maximum suppression (`torchvision.ops.nms`,
    `batched_nms`), whose output is the number of boxes kept: its CUDA kernel
    copies the suppression mask to the host and keeps boxes there. Run NMS once
    per batch (`batched_nms` with the image index in `idxs`), not once per image.

    ## Why is this bad?
    The host cannot allocate the result, nor launch anything that depends on
    it, before the device has counted the non-zero elements. On CUDA the CPU
    stops queueing kernels and waits for the whole queue to drain. In the seed
    segmentation loss, one `torch.nonzero` made a 5 ms step take 1.3 s.

    ## Example
    ```python
    inds = torch.nonzero(target == background, as_tuple=True)
    target[inds] = ignore_index
    ```

    ## Use instead
    ```python
    target = target.masked_fill(target == background, ignore_index)
    # or, with tensor values:
    target = torch.where(target == background, ignore_index, target)
    ```
    When an upper bound on the count is known, `x.nonzero_static(size=n)`
    keeps the shape static.

    ## Fix safety
    Index assignment through the nonzero result becomes `x.masked_fill_(c, v)`
    (scalar value) or `x.copy_(torch.where(c, y, x))` (for `x[i] = y[i]`), in
    place like the original, and only when `c` is computed elementwise from `x`
    (a row mask such as `x.any(-1)` selects rows, while `masked_fill_`
    broadcasts from the right: no fix), nothing between the `nonzero` and the
    write mutates anything (an alias of `x` could change `c`), and `torch` is
    reachable there. Safe when `v` is a Python number. Unsafe when `v` is of
    unknown kind (a value tensor with dimensions now raises; one of another dtype
    made the original raise and is now cast) and for the `copy_` form (index
    assignment raises when `y`'s dtype differs, `copy_` casts). A now-unused
    `inds = ...` line is removed.
    A nonzero result used only for its count (`len(...)`, `.shape[0]`,
    `.size(0)`, and `.numel()` of one `as_tuple` index) becomes
    `torch.count_nonzero(...)` (unsafe: a 0-d tensor), only where the count
    meets a tensor or is only tested for truth (`if n > 0:`), also through one
    name; a count that is returned, stored, formatted, used as a dict key, a
    shape or a `range` bound gets no fix.
    The largest coordinate, `torch.nonzero(c).max()` (also `c.nonzero()`,
    `torch.argwhere(c)`, `.amax()`, per column `.amax(0)`), becomes
    `torch.nonzero_static(c, size=c.numel()).max()` (unsafe): the static result
    holds every row of the original, then rows of `-1`, which never win the
    max over coordinates `>= 0`; the smallest (`.min()`, `.amin()`, `.amin(0)`)
    pads with `fill_value=c.numel()`, above every coordinate. Only when `c` is
    a known tensor named by a name or attribute (bound `c.numel()`), or such a
    tensor `x` compared with a number (bound `x.numel()`). The first row,
    `torch.nonzero(c)[0]`, becomes `torch.nonzero_static(c, size=1)[0]` for
    any `c`. `max(dim)` / `min(dim)` (indices), per-row reductions, other rows
    and `as_tuple` results get no fix. When `c` has no non-zero element, the
    original raises and the fixed code returns the fill (`-1`, or `c.numel()`
    for a minimum); a reduction form always allocates `c.numel()` rows.
    The message says why a fix is declined.
    """

    syncs_every_call = True

    code = "SL101"
    device_sync = True
    name = "nonzero"
    TOKENS = frozenset({"nonzero", "argwhere", "where", "nms"})  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        "import torch\nidx = torch.where(m, a, b)\n",
        "import torch\nidx = x.nonzero_static(size=8)\n",
        "import numpy as np\nidx = np.nonzero(a)\n",
        "import numpy as np\nimport torch\nidx = np.where(a > 0)\n",
        "import numpy as np\nimport torch\na = np.arange(3)\nidx = a.nonzero()\n",
        "import torch\nn = torch.count_nonzero(m)\n",
        "import torch\nfrom torchvision.ops import box_iou\niou = box_iou(a, b)\n",
    )
    INVALID = (
        Invalid("import torch\nidx = torch.nonzero(m)\n", 2, 7),
        Invalid("import torch as T\nidx = T.nonzero(m, as_tuple=True)\n", 2, 7),
        Invalid("from torch import nonzero as nz\nidx = nz(m)\n", 2, 7),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x.nonzero()\n", 3, 12),
        Invalid("import torch\nidx = torch.where(x > 0)\n", 2, 7),
        Invalid("import torch\nidx = torch.argwhere(x)\n", 2, 7),
        Invalid("import torch\nfrom torchvision.ops import nms\ndef f(boxes: torch.Tensor, scores: torch.Tensor):\n"
                "    return nms(boxes, scores, 0.5)\n", 4, 12),
        Invalid("import torch\nimport torchvision\ndef f(b: torch.Tensor, s: torch.Tensor, c: torch.Tensor):\n"
                "    return torchvision.ops.batched_nms(b, s, c, 0.5)\n", 4, 12),
        Invalid("import torch\nidx = torch.Tensor.nonzero(x)\n", 2, 7),
        Invalid("import torch\ndef f(x):\n    return (torch.exp(x) > 1).nonzero()[:, 0]\n", 3, 12),
        Invalid('import torch\ndef f(t: torch.Tensor):\n    inds = torch.nonzero(t == 9, as_tuple=True)\n    t[inds] = -1\n    return t\n', 3, 12, 'import torch\ndef f(t: torch.Tensor):\n    t.masked_fill_(t == 9, -1)\n    return t\n'),
        Invalid('import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x[torch.where(x < 0)] = y[torch.where(x < 0)]\n', 3, 7, 'import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x.copy_(torch.where(x < 0, y, x))\n'),
        Invalid('import torch\ndef f(m: torch.Tensor):\n    return len(torch.nonzero(m)) > 0\n', 3, 16, None),
        Invalid('import torch\ndef f(m: torch.Tensor):\n    return m.nonzero().max()\n', 3, 12, 'import torch\ndef f(m: torch.Tensor):\n    return torch.nonzero_static(m, size=m.numel()).max()\n'),
    )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is None:
            return
        if match.op.name == "single-argument torch.where":
            positional = [a for a in node.args if a.keyword is None and not a.star]
            if len(node.args) != 1 or len(positional) != 1:
                return
            what = f"{match.display} with one argument"
        else:
            what = match.display
        self.report(node, self.sync_message(what, match.op), None if match.helper else self.propose_fix(node))

