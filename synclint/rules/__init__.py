"""The rule registry: one module per rule, named ``sl<code>_<name>.py``.

``ALL_RULES`` is ordered by code; ``RULES_BY_CODE`` maps ``"SL101"`` to its class.
"""

from __future__ import annotations

from synclint.rules.base import Invalid, Rule
from synclint.rules.sl101_nonzero import Nonzero
from synclint.rules.sl102_unique import Unique
from synclint.rules.sl103_boolean_mask import BooleanMask
from synclint.rules.sl104_dynamic_repeat import DynamicRepeat
from synclint.rules.sl105_bincount import Bincount
from synclint.rules.sl201_host_readback import HostReadback
from synclint.rules.sl202_tensor_truthiness import TensorTruthiness
from synclint.rules.sl301_per_sample_loop import PerSampleLoop
from synclint.rules.sl302_per_sample_transfer import PerSampleTransfer
from synclint.rules.sl401_blocking_transfer import BlockingTransfer
from synclint.rules.sl402_unpinned_loader import UnpinnedLoader
from synclint.rules.sl403_host_tensor_ctor import HostTensorCtor
from synclint.rules.sl404_pageable_non_blocking import PageableNonBlocking
from synclint.rules.sl501_explicit_sync import ExplicitSync

ALL_RULES: tuple[type[Rule], ...] = tuple(
    sorted(
        (
            Nonzero, Unique, BooleanMask, DynamicRepeat, Bincount, HostReadback,
            TensorTruthiness, PerSampleLoop, PerSampleTransfer, BlockingTransfer,
            UnpinnedLoader, HostTensorCtor, PageableNonBlocking, ExplicitSync,
        ),
        key=lambda rule: rule.code,
    )
)
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
RULES_BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}

__all__ = ["ALL_RULES", "RULES_BY_CODE", "RULES_BY_NAME", "Invalid", "Rule"]
