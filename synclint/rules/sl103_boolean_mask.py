from __future__ import annotations

import libcst as cst

from synclint.analysis.kinds import Kind
from synclint.catalogue import ops_for
from synclint.prefilter import TENSOR_EVIDENCE
from synclint.rules.base import Invalid, Rule
from synclint.rules.matching import match_sync_call

_MASKED_SELECT, _MASK_READ, _MASK_WRITE = ops_for("SL103")
_NOT_TENSORS = frozenset({Kind.NUMPY, Kind.PANDAS, Kind.PYTHON, Kind.TENSOR_SEQUENCE, Kind.MODULE})


class BooleanMask(Rule):
    """Flags boolean-mask indexing: `x[mask]`, `x[mask] = tensor`, `masked_select`.

    ## What it does
    Finds subscripts of a tensor whose index is a boolean tensor (a
    comparison, `~m`, `m1 & m2`, `isnan(x)`, `.bool()`, `dtype=torch.bool`),
    index writes through such a mask whose value is a tensor, augmented
    writes (`x[m] += v`), and `masked_select`.

    A write whose value is a Python scalar (`x[m] = 0`) is *not* flagged:
    PyTorch dispatches it to `masked_fill_`, which does not sync. Integer
    index tensors (`x[idx]`) are gathers with a static shape and are not flagged.

    ## Why is this bad?
    A boolean mask selects a data-dependent number of elements: the host must
    wait for the device to count them before it can allocate the result. In
    the seed loss, masking logits and targets before the cross-entropy cost
    more than computing the loss on every pixel.

    ## Example
    ```python
    mask = target != ignore_index
    loss = F.cross_entropy(pred.permute(0, 2, 3, 1)[mask], target[mask])
    ```

    ## Use instead
    ```python
    loss = F.cross_entropy(pred, target, ignore_index=ignore_index)
    # reductions: (x * mask).sum() / mask.sum().clamp(min=1)
    # updates:    x = torch.where(mask, y, x)
    ```

    ## Fix safety
    All unsafe, and offered only when the mask is computed elementwise from the
    tensor (same shape), nothing in between mutates anything, and `torch` is
    reachable; otherwise the message says why there is no fix.
    `x[m].sum()` / `.amax()` / `.amin()` become reductions of
    `torch.where(m, x, fill)` (the fill is `-inf`/`inf`, or the integer dtype's
    limits, so the dtype is kept); `x[m].mean()` becomes the where-sum
    accumulated in at least float32 (`sum(dtype=torch.promote_types(x.dtype,
    torch.float32))`) over `m.sum()`, cast back to `x.dtype`, so fp16 does not
    overflow and an empty mask gives NaN as before. Summation order differs
    (last bits); an empty mask gives the fill from `amax`/`amin` where the
    original raised.
    `x[m] = y[m]` becomes `x.copy_(torch.where(m, y, x))`, or for a fresh local
    `x = torch.where(m, y.to(x.dtype), x)`: where `y`'s dtype differs the
    original raised and the fix casts; a NaN/inf derivative of `y` at unselected
    elements now reaches the gradient.
    Masked cross-entropy (`ce(p.permute(0, 2, 3, 1)[m], t[m])`) becomes
    cross-entropy on the unmasked tensors with the masked-out targets set to the
    call's ignore index (`torch.where(m, t, -100)`; plain `ignore_index=K` only
    when that is the same value), and only when the mask is elementwise of the
    target (not an image-level mask) and the targets are class indices (rows
    reshaped to `(-1, C)`, an integer tensor, or `t != K` on channels-last
    logits); never for `reduction="none"`. All-masked inputs give NaN in both.
    """

    syncs_every_call = True

    code = "SL103"
    device_sync = True
    name = "boolean-mask"
    TOKENS = TENSOR_EVIDENCE  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        "import torch\ndef f(x: torch.Tensor):\n    x[x < 0] = 0\n",
        "import torch\ndef f(x: torch.Tensor, idx: torch.Tensor):\n    return x[idx.long()]\n",
        "import numpy as np\nimport torch\na = np.zeros(3)\nb = a[a > 0]\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x[:, 0:2]\n",
        "import torch\ndef f(x: torch.Tensor):\n    return x[torch.argsort(x)]\n",
        "import torch\ndef f(x: torch.Tensor):\n    x[torch.isnan(x)] = 0.0\n",
        "import torch\ndef f(x: torch.Tensor):\n    return torch.where(x > 0, x, 0)\n",
        "import torch\ndef collate_boxes(batch):\n    b = torch.stack(batch)\n    return b[b[:, 2] > 0]\n",
        "import torch\ndef f(values):\n    t = torch.tensor(values)\n    return t[t > 0]\n",
    )
    INVALID = (
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x[x > 0]\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    m = x > 0\n    x[m] = y[m]\n", 4, 5),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x[:, ~torch.isnan(x[0])]\n", 3, 12),
        Invalid("import torch as T\ndef f(x):\n    return T.masked_select(x, x > 0)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    m = (x > 0) & (x < 1)\n    x[m] += 1\n", 4, 5),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return x[x.isfinite()].mean()\n", 3, 12),
        Invalid("import torch\nclass L(torch.nn.Module):\n    def forward(self, p, t):\n        return p[t != -1]\n", 4, 16),
        Invalid('import torch\ndef f(x: torch.Tensor):\n    return x[x > 0].sum()\n', 3, 12, 'import torch\ndef f(x: torch.Tensor):\n    return torch.where(x > 0, x, 0).sum()\n'),
        Invalid('import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x[x > 0] = y[x > 0]\n', 3, 5, 'import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    x.copy_(torch.where(x > 0, y, x))\n'),
        Invalid('import torch\nimport torch.nn.functional as F\ndef f(p: torch.Tensor, t: torch.Tensor):\n    m = t != -1\n    return F.cross_entropy(p.permute(0, 2, 3, 1)[m], t[m])\n', 5, 28, None),
    )

    def _mask_index(self, node: cst.Subscript) -> bool:
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and self.context.kind_of(index.value) is Kind.BOOL_TENSOR:
                return True
        return False

    def _indexes_a_tensor(self, node: cst.Subscript) -> bool:
        """The indexed value may be a device tensor (not numpy, a list, or a host tensor)."""
        return self.context.kind_of(node.value) not in _NOT_TENSORS and not self.context.on_host(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if getattr(self, "_write_target", None) is node:
            return
        if self._mask_index(node) and self._indexes_a_tensor(node):
            self.report(node, self.sync_message("Boolean-mask indexing `x[mask]`", _MASK_READ), self.propose_fix(node))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            subscript = target.target
            if not (isinstance(subscript, cst.Subscript) and self._mask_index(subscript)):
                continue
            self._write_target = subscript
            if self._indexes_a_tensor(subscript) and self.context.kind_of(node.value).is_tensor:
                self.report(
                    subscript,
                    self.sync_message("Boolean-mask assignment `x[mask] = tensor`", _MASK_WRITE),
                    self.propose_fix(node),
                )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        subscript = node.target
        if isinstance(subscript, cst.Subscript) and self._mask_index(subscript):
            self._write_target = subscript
            if self._indexes_a_tensor(subscript):
                self.report(
                    subscript,
                    self.sync_message("Boolean-mask update `x[mask] op= v`", _MASK_WRITE),
                )

    def visit_Call(self, node: cst.Call) -> None:
        match = match_sync_call(self.context, node, self.code)
        if match is not None:
            self.report(node, self.sync_message(match.display, _MASKED_SELECT))

