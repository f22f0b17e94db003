"""The kernel check as ``torch.compile`` sees it (imported only while tracing).

``torch.compiler.assume_constant_result`` imports ``torch._dynamo`` (over a
second), so it is applied here, in a module that :func:`synclint.ops.giou._use_kernel`
imports only when ``torch.compiler.is_compiling()``, when Dynamo is loaded anyway.
"""

from __future__ import annotations

import torch

from synclint.ops import _build


@torch.compiler.assume_constant_result
def use_kernel(device_type: str) -> bool:
    # Evaluated eagerly at trace time (building or loading the kernel there,
    # outside the graph) and baked into the graph as a constant.
    return _build.ensure_kernel(device_type)
