"""Whether a function or class is named like a loss: such code runs every step whatever the
call graph shows (a trainer may look the loss up by name or get it from a config).

Names are read word by word (``snake_case`` and ``CamelCase``), not as substrings:
``LossAwareSampler.update_with_local_losses`` (diffusion's timestep sampler) is neither
a loss class nor a loss function, ``lossless_compress`` has no loss in it, while
``SetCriterion``, ``ComputeLoss``, ``FocalLossV2``, ``bbox_loss`` and ``compute_loss`` are.
"""

from __future__ import annotations

import re

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_LOSS_WORDS = frozenset({"loss", "losses", "criterion", "criterions", "objective", "objectives"})
_NOT_LOSS_WORDS = frozenset({"lossless", "lossy"})
#: Words after the loss word that still name the loss itself (``FastRCNNLossComputation``).
_LOSS_SUFFIXES = frozenset({"computation", "fn", "func", "function", "module", "wrapper", "layer", "head", "v", "d"})
#: A function whose first word is one of these does something with losses (records,
#: logs, updates a sampler with them) rather than computing one.
_NOT_COMPUTING = frozenset(
    {"update", "record", "log", "track", "accumulate", "reset", "set", "save", "load", "plot", "print", "report",
     "register", "show", "write", "dump", "init"}
)


def _words(name: str) -> list[str]:
    return [word.lower() for part in name.split("_") for word in _WORDS.findall(part)]


def _is_loss_word(word: str) -> bool:
    if word in _NOT_LOSS_WORDS:
        return False
    return word in _LOSS_WORDS or word.endswith(("loss", "losses")) or word.startswith("loss")


def is_loss_function(name: str) -> bool:
    """``compute_loss``, ``bbox_loss``, ``criterion``, ``giouloss`` (not ``update_with_local_losses``)."""
    words = _words(name)
    return bool(words) and words[0] not in _NOT_COMPUTING and any(_is_loss_word(word) for word in words)


def is_loss_class(name: str) -> bool:
    """``DiceLoss``, ``SetCriterion``, ``FocalLossV2``, ``FastRCNNLossComputation``: the last word
    (version numbers aside) is the loss word, or a word naming the loss after it."""
    words = [word for word in _words(name) if not word.isdigit()]
    if not words:
        return False
    if _is_loss_word(words[-1]):
        return True
    return len(words) >= 2 and words[-1] in _LOSS_SUFFIXES and _is_loss_word(words[-2])
