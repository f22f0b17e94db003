"""Blocks of a function that the step's calls never enter.

``if is_joined_rank:`` in a helper that every call from hot code passes
``is_joined_rank=False``; ``if mode == "cpu":`` in a ``get_assignments(..., mode="gpu")``
whose calls from the step keep the default (YOLOX passes ``mode="cpu"`` only from the
handler of a CUDA out-of-memory error). Such a block runs for other callers (a join
hook, an error path), not once per step: it is cold, and so is what only it calls
(:func:`synclint.project.hotness.contexts_and_skipped_blocks` takes calls made in it
out of the call graph's hot edges).

Public functions are also called from outside the project, with values the index
cannot see. For them a block is cold only when it needs a value other than the
parameter's constant default: an opt-in mode (``use_cpu=True``, a ``mask`` passed
instead of ``None``) that none of the step's calls asks for, nor any call from code of
unknown context (a script's ``get_batch`` the trainer is handed as a value). A block
the default runs (``if not fast:`` with ``fast=False``) stays hot, whatever the
project's own calls pass. Steps (``forward``, losses) are left alone: their callers are outside the project.
So are functions the project passes as values (``checkpoint(self._inner, x, mask)``,
``functools.partial``, hooks, calls in lambdas): whoever calls them passes arguments no
call the index reads shows (:mod:`synclint.project.value_references`).
"""

from __future__ import annotations

from collections.abc import Mapping

from synclint.project.index import FunctionId, ProjectIndex
from synclint.project.rare_blocks import ParamGuard
from synclint.project.summary import CallSite, FunctionSummary

#: What a call passes for a parameter when it is not a constant.
_TENSOR = object()  # a visible tensor: not None, truth and equality unknown
_UNKNOWN = object()

#: (first line, last line, why) of the blocks of one function.
SkippedBlocks = tuple[tuple[int, int, str], ...]


def blocks_the_step_skips(
    index: ProjectIndex, contexts: Mapping[FunctionId, object], quiet_calls: Mapping[int, str]
) -> dict[FunctionId, SkippedBlocks]:
    """Per function, the blocks none of its calls from hot code enters. ``contexts``
    are the current contexts; ``quiet_calls`` the calls already known to sit in such
    blocks (by identity), which make nothing hot. A function passed as a value
    (``checkpoint(self._inner, x, mask)``) is left alone: its calls are not all it is passed."""
    found: dict[FunctionId, SkippedBlocks] = {}
    callers = index.callers()
    owners = index.call_owners()
    passed_as_values = index.passed_as_values()
    for key, entry in index.entries.items():
        for qualname, function in entry.summary.functions.items():
            if not function.param_guards or function.root is not None or function.name in passed_as_values:
                continue  # a step (what its callers pass is outside the project), or called unseen
            hot, unsure = [], []
            for call, plain in callers.get((key, qualname), ()):
                if call.quiet is None and id(call) not in quiet_calls:
                    context = contexts.get(owners[id(call)])
                    if _is_hot(context):
                        hot.append((call, plain))
                    elif not getattr(context, "is_cold", False):
                        unsure.append((call, plain))
            if not hot or not all(plain for _call, plain in hot):
                continue  # (arguments line up with parameters only in plain calls)
            blocks = _skipped(function, [call for call, _plain in hot], unsure)
            if blocks:
                found[(key, qualname)] = blocks
    return found


def _is_hot(context: object) -> bool:
    return context is not None and getattr(context, "is_hot", False)


def _skipped(function: FunctionSummary, hot: list[CallSite], unsure: list[tuple[CallSite, bool]]) -> SkippedBlocks:
    """The guarded blocks no call of ``hot`` enters. A public function's opt-in mode must
    also be asked for by none of ``unsure``, the calls from code of unknown context (each
    with whether its arguments line up): a training script's ``get_batch``, handed to the
    trainer as a value, that passes ``is_hybrid_cp=args.dynamic_context_parallel``."""
    params = list(function.params)
    if function.cls is not None and params[:1] in (["self"], ["cls"]):
        params = params[1:]
    public = not _private(function.name)
    blocks = []
    for guard in function.param_guards:
        if guard.param not in params:
            continue
        # A keyword-only parameter has no position: ``f(x, 0, check=True)`` passes ``0`` to ``*sizes``.
        position = None if guard.param in function.keyword_only else params.index(guard.param)
        passed = [_passed(call, position, guard.param, function.defaults) for call in hot]
        if any(_may_enter(guard, value) for value in passed):
            continue
        if public and (guard.param not in function.defaults or guard.entered(function.defaults[guard.param])):
            continue  # not an opt-in mode: callers outside the project may run it by default
        if public and any(not plain or _may_enter(guard, _passed(call, position, guard.param, function.defaults))
                          for call, plain in unsure):
            continue  # the project's own code may ask for the mode, where the index cannot tell how often
        values = " or ".join(sorted({"a tensor" if value is _TENSOR else repr(value) for value in passed}))
        blocks.append((guard.first, guard.last, f"not on the step's path (its calls from the step pass `{guard.param}={values}`)"))
    return tuple(blocks)


def _may_enter(guard: ParamGuard, value: object) -> bool:
    if value is _UNKNOWN:
        return True
    if value is _TENSOR:
        return guard.test != "none" or guard.entered(_TENSOR)  # a tensor is not None
    return guard.entered(value)


def _passed(call: CallSite, position: int | None, param: str, defaults: Mapping[str, object]) -> object:
    """What ``call`` passes for the parameter: a constant's value (the default when it
    passes nothing), :data:`_TENSOR`, or :data:`_UNKNOWN`."""
    for where, value in call.constants:
        if where == "*":
            return _UNKNOWN  # ``*args`` / ``**kwargs``: it may pass the parameter
        if where in (position, param):
            if value:
                return value[0]
            return _TENSOR if where in call.tensor_args else _UNKNOWN
    return defaults.get(param, _UNKNOWN)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")
