"""Fused box-loss operators: ``synclint.ops.giou_loss`` and friends.

Importing this module imports torch and registers the operator schemas, but
compiles nothing: the C++ (and, with CUDA, the CUDA) kernel is built on the
first call that needs it, or by :func:`load`, and cached per user. Without a
compiler the pure-PyTorch reference is used, after a one-time
:class:`KernelUnavailableWarning`. See ``docs/giou.md``.
"""

from synclint.ops._build import KernelUnavailableWarning, kernel_available, load
from synclint.ops.giou import giou, giou_loss
from synclint.ops.reference import giou_loss_reference, giou_reference

__all__ = [
    "KernelUnavailableWarning",
    "giou",
    "giou_loss",
    "giou_loss_reference",
    "giou_reference",
    "kernel_available",
    "load",
]
