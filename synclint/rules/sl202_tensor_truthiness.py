from __future__ import annotations

import libcst as cst

from synclint.analysis.kinds import Kind
from synclint.catalogue import entry
from synclint.prefilter import TENSOR_EVIDENCE
from synclint.rules.base import Invalid, Rule

_READBACK = entry("SL202", "tensor truthiness")


class TensorTruthiness(Rule):
    """Flags a tensor used as a Python bool: `if t:`, `while t:`, `assert t`, `t and u`, `not t`, `max(a, b)`.

    ## What it does
    Finds tensors in a Python boolean context: the test of `if`, `while`,
    `assert`, a conditional expression or a comprehension filter; operands of
    `and` / `or` / `not`; and the builtin `min` / `max` applied to tensors, to
    a list or tuple of them (`max(ps)`, `max(*ps)`, `max((a, b))`) or to a
    generator of them (`max(t.abs().max() for t in ts)`): they compare with
    `bool(a < b)`. With `key=` the key's results are compared: a named function
    (`key=len`) is taken to return Python values, a lambda is judged by its body
    (`key=lambda t: t.numel()` compares ints, `key=lambda t: t.sum()` tensors).
    Tensors on the host compare without waiting: `max(p.cpu() for p in ps)`, or
    a name bound to such a list, is not flagged (its `.cpu()` is SL201's).

    ## Why is this bad?
    Python calls `Tensor.__bool__`, which reads the value back to the host:
    the CPU waits for the device before it can decide which branch to take.

    ## Example
    ```python
    if num_unique < 2:
        loss = 0.0 * loss
    ```

    ## Use instead
    ```python
    loss = torch.where(num_unique < 2, 0.0 * loss, loss)
    ```
    and `torch.maximum(a, b)` instead of `max(a, b)`.

    ## Fix safety
    An `if` whose body (and `else`) only assigns one name becomes
    `name = torch.where(cond, a, b)` (unsafe), only when the condition is a
    one-element boolean tensor (a comparison of full reductions or counts) and
    both branches are one floating tensor under dtype- and shape-keeping
    elementwise operations with float literals (`0.0 * loss`, `-loss`,
    `loss / 4.0`): no `None`/str/list/custom objects, no other shapes (kornia's
    empty-vs-sampled branches), no calls with side effects, and no op whose
    derivative is infinite (`sqrt`), so the untaken branch adds exactly zero to
    the gradient. The message says which condition was not proven.
    """

    code = "SL202"
    device_sync = True
    name = "tensor-truthiness"
    TOKENS = TENSOR_EVIDENCE  # see synclint.prefilter
    fix_applicability = "unsafe"

    VALID = (
        # A flag passed to a forward (self-critical's loss wrapper) is a Python bool.
        "import torch\nclass LossWrapper(torch.nn.Module):\n    def forward(self, fc_feats, labels, struc_flag):\n"
        "        if struc_flag:\n            return self.struc_crit(fc_feats, labels)\n        return self.crit(fc_feats, labels)\n",
        # A private torch helper is no tensor math: ``_Reduction.get_enum`` returns an int
        # (the ``reduce_loss`` of mmdet-style loss utilities, NAFNet's among them).
        "import torch.nn.functional as F\ndef reduce_loss(loss, reduction):\n"
        "    reduction_enum = F._Reduction.get_enum(reduction)\n    if reduction_enum == 0:\n        return loss\n"
        "    elif reduction_enum == 1:\n        return loss.mean()\n    return loss.sum()\n",
        # ``need_*`` and ``has_*`` inputs are Python bools (XMem's ``need_s``).
        "import torch\nclass KeyProjection(torch.nn.Module):\n    def forward(self, x, need_s, need_e):\n"
        "        s = self.d_proj(x) if need_s else None\n        return self.key_proj(x), s\n",
        # A layer's index or a counter (PreSumm's ``iter``, CMC's ``layer``) is a Python int.
        "import torch\nclass TransformerEncoderLayer(torch.nn.Module):\n    def forward(self, iter, query, mask):\n"
        "        if iter != 0:\n            query = self.layer_norm(query)\n        return self.attn(query, mask)\n",
        # A 3-D patch merge's depth, height and width (nnFormer) are sizes.
        "import torch\nclass PatchMerging(torch.nn.Module):\n    def forward(self, x, S, H, W):\n"
        "        B, L, C = x.shape\n        assert L == H * W * S\n        return x.view(B, S, H, W, C)\n",
        # A forward's input that ``torch.cat`` takes is a list of tensors: its truth is its length.
        "import torch\nclass Fuse(torch.nn.Module):\n    def forward(self, feats):\n        if feats:\n"
        "            return torch.cat(feats, 1)\n        return None\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x is None:\n        return 0\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x.shape[0] > 0:\n        return 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x.numel() == 0:\n        return 1\n",
        "import torch\ndef f(x: torch.Tensor):\n    if x.dense_dim() > 0 and not x._is_view():\n        return 1\n",
        "import torch\nclass Bias(torch.nn.Module):\n    def forward(self, i, j):\n"
        "        if self.bias is not None and self.bias.shape[-1] >= j:\n            return self.bias[..., -i:, -j:]\n",
        "import torch\ndef f(x: torch.Tensor, n: int):\n    while n:\n        n -= 1\n",
        "import torch\ndef f(u: torch.Tensor):\n    ignore = torch.numel(u) < 2\n    if ignore:\n        return 0\n",
        "import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n    return torch.maximum(a, b)\n",
        "import torch\ndef f(xs: list[int]):\n    return max(x * 2 for x in xs)\n",
        "import torch\ndef f(ps: list[torch.Tensor]):\n    return max(p.detach().cpu() for p in ps)\n",
        "import torch\ndef f(ps: list[torch.Tensor]):\n    return max(ps, key=lambda p: p.numel())\n",
        "import torch\ndef f(ps: list[torch.Tensor]):\n    return max(ps, key=len)\n",
        "import torch\ndef f(x: torch.Tensor):\n    return max((x,))\n",
        "import torch\ndef f():\n    a, b = torch.zeros(()), torch.ones(())\n    return max(a, b), max((a, b))\n",
        "import pandas as pd\nimport torch\ndef f(frames):\n    return max(s.abs().max() for s in frames)\n",
        # A named list of host tensors compares on the host (its `.cpu()` is SL201's).
        "import torch\ndef f(ps: list[torch.Tensor]):\n    qs = [p.detach().cpu() for p in ps]\n    return max(qs), max(*qs)\n",
        "import numpy as np\na = np.zeros(3)\nif a.any():\n    pass\n",
        "import torch\nclass M(torch.nn.Module):\n    def forward(self, outputs, targets):\n"
        "        return {k: v for k, v in outputs.items() if k != 'aux'}\n",
        "import torch\ndef f(x: torch.Tensor):\n    if not torch.jit.is_scripting() and torch.is_autocast_enabled():\n        return x\n",
        # `Tensor.__ne__(None)` gives NotImplemented: Python compares identities, no op runs.
        "import torch\ndef f(x: torch.Tensor, mask: torch.Tensor):\n    if mask != None and None == x:\n        return x\n",
    )
    INVALID = (
        # A name an import binds to a module (``import loss.focal`` binds ``loss``) that the
        # function binds too is the function's: read at the top of the loop body, it is the
        # previous pass's loss, a device tensor by the function's evidence.
        Invalid(
            "import torch\nimport loss.focal\ndef train(model, loader, criterion):\n"
            "    for step, batch in enumerate(loader):\n        if step > 0:\n            if loss > 1e3:\n"
            "                print('diverging')\n        loss = criterion(model(batch.cuda(non_blocking=True)))\n"
            "        loss.backward()\n",
            6, 16,
        ),
        # The number branch of ``torch.is_tensor`` ends where the name is bound to a tensor.
        Invalid(
            "import torch\ndef f(v, x: torch.Tensor):\n    if not torch.is_tensor(v):\n"
            "        v = torch.as_tensor(v, device=x.device)\n        if v:\n            return x\n    return x * 2\n",
            5, 12,
        ),
        # The list branch of an isinstance check rebinds the name to a tensor: the narrowing ends.
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
            "        if isinstance(x, (list, tuple)):\n            x = x[0]\n            if x:\n"
            "                return 1\n        return 0\n",
            6, 16,
        ),
        # A function defined in the list branch: its own parameter of that name is no list.
        Invalid(
            "import torch\nclass M(torch.nn.Module):\n    def forward(self, x):\n"
            "        if isinstance(x, (list, tuple)):\n            def f(x: torch.Tensor):\n"
            "                if x:\n                    return 1\n                return 0\n"
            "            return [f(v) for v in x]\n        return x\n",
            6, 20,
        ),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    if x.sum() > 0:\n        return 1\n", 3, 8),
        Invalid("import torch\ndef f(loss: torch.Tensor):\n    if torch.isnan(loss).any():\n        return 1\n", 3, 8),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    assert (x >= 0).all()\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    while x.max() > 1:\n        x = x / 2\n", 3, 11),
        Invalid("import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return max(x, y)\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    return max(p.abs().max() for p in ps)\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    return max(ps)\n", 3, 12),
        Invalid("import torch\ndef f(a: torch.Tensor, b: torch.Tensor):\n    return max(a, b, key=lambda t: t.abs().sum())\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    return min(*ps)\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return max(*x)\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    return max(0.0, *ps)\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    return max([*ps])\n", 3, 12),
        Invalid("import torch\ndef f(x: torch.Tensor, y: torch.Tensor):\n    return max((x.sum(), y.sum()))\n", 3, 12),
        Invalid("import torch\ndef f(ps: list[torch.Tensor]):\n    norms = [p.norm() for p in ps]\n    return max(norms)\n", 4, 12),
        Invalid("import numpy as np\nimport torch\ndef f(ts):\n    return max(t.data.abs().max() for t in ts)\n", 4, 12),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return 1 if x.any() else 0\n", 3, 17),
        Invalid("import torch\ndef f(x: torch.Tensor, n: int):\n    if n > 0 and x.any():\n        return 1\n", 3, 18),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    return not x.all()\n", 3, 16),
        Invalid('import torch\ndef f(loss: torch.Tensor, n: torch.Tensor):\n    if n < 2:\n        loss = 0.0 * loss\n    return loss\n', 3, 8, None),
        Invalid("import torch\ndef f(x: torch.Tensor):\n    loss = x.mean()\n    if x.sum() > 0:\n        loss = 0.0 * loss\n    return loss\n", 4, 8,
                "import torch\ndef f(x: torch.Tensor):\n    loss = x.mean()\n    loss = torch.where(x.sum() > 0, 0.0 * loss, loss)\n    return loss\n"),
    )

    def __init__(self, context) -> None:
        super().__init__(context)
        self._seen: set[int] = set()

    def _check(self, test: cst.BaseExpression, statement: cst.CSTNode | None = None) -> None:
        if isinstance(test, cst.BooleanOperation):
            self._check(test.left)
            self._check(test.right)
        elif isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            self._check(test.expression)
        elif id(test) not in self._seen and self.context.is_device_tensor(test):
            self._seen.add(id(test))
            message = self.sync_message("Using a tensor as a Python bool", _READBACK)
            fix = None
            if statement is not None:
                fix = self.propose_fix(statement)
            self.report(test, message, fix)

    def visit_If(self, node: cst.If) -> None:
        self._check(node.test, node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.test)

    def visit_Assert(self, node: cst.Assert) -> None:
        self._check(node.test)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._check(node.test)

    def visit_CompIf(self, node: cst.CompIf) -> None:
        self._check(node.test)

    def visit_BooleanOperation(self, node: cst.BooleanOperation) -> None:
        self._check(node.left)  # evaluated as a bool whatever the context

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if isinstance(node.operator, cst.Not):
            self._check(node.expression)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Name) and func.value in ("min", "max")):
            return
        if self.context.imports.qualify(func) is not None:
            return
        if self._compares_tensors(node) and id(node) not in self._seen:
            self._seen.add(id(node))
            torch_op = "maximum" if func.value == "max" else "minimum"
            advice = f"compare on the device: `torch.{torch_op}(a, b)`, or `torch.stack(values).{func.value}()`"
            self.report(node, self.sync_message(f"Builtin `{func.value}()` of tensors", _READBACK, advice))

    def _compares_tensors(self, call: cst.Call) -> bool:
        """``max(a, b)`` of device tensors, or ``max(ps)`` / ``max(*ps)`` / ``max((a, b))`` /
        ``max(t.abs().max() for t in ts)`` over a sequence of them: each comparison's
        result is read back to pick the winner (``torch.maximum`` /
        ``torch.stack(...).max()`` stay on the device). With ``key=`` the key's results are
        compared instead: Python values for a named function (``max(ps, key=len)``) or a lambda
        of a Python value; a lambda of anything else (``key=lambda t: -t``) compares tensors."""
        key = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "key"), None)
        if key is not None and not (isinstance(key, cst.Lambda) and self.context.kind_of(key.body) is not Kind.PYTHON):
            return False  # ``key=len``, ``key=lambda t: t.numel()``: Python values are compared
        args = [a for a in call.args if a.keyword is None]
        if len(args) == 1 and not args[0].star:
            value = args[0].value  # one iterable: its items are compared
            if isinstance(value, (cst.Tuple, cst.List)):
                return self._compares_a_device_tensor(
                    [(element.value, isinstance(element, cst.StarredElement)) for element in value.elements]
                )
            return self._yields_device_tensors(value)
        return self._compares_a_device_tensor([(a.value, a.star == "*") for a in args])

    def _compares_a_device_tensor(self, items: list[tuple[cst.BaseExpression, bool]]) -> bool:
        """Items of ``max(a, *ps)`` or ``max((a, *ps))``, each with whether it is unpacked: a
        device tensor among them, or in an unpacked one, is compared. One item alone is
        returned, never compared; a tensor on the host compares without waiting."""
        if len(items) == 1 and not items[0][1]:
            return False
        return any(
            self._yields_device_tensors(value) if unpacked else self.context.is_device_tensor(value)
            for value, unpacked in items
        )

    def _yields_device_tensors(self, iterable: cst.BaseExpression) -> bool:
        """Iterating ``iterable`` gives device tensors: a sequence of tensors, or a device
        tensor itself (``max(t)`` and ``max(*t)`` compare its rows). A comprehension yields
        what its element is, where it lives (``max(p.cpu() for p in ps)`` compares on the host)."""
        if isinstance(iterable, (cst.GeneratorExp, cst.ListComp)):
            if self.context.kind_of(iterable) is not Kind.TENSOR_SEQUENCE:
                return False
            with self.context.flow.comprehension_bindings(iterable):
                return not self.context.on_host(iterable.elt)
        if self.context.kind_of(iterable) is Kind.TENSOR_SEQUENCE:
            return not self.context.on_host(iterable)  # ``qs = [p.cpu() for p in ps]; max(qs)``
        return self.context.is_device_tensor(iterable)
