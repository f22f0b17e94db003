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
project's own calls pass.

Steps (``forward``, losses) are left alone: their callers are outside the project. So
are functions the project passes as values (``checkpoint(self._inner, x, mask)``,
``functools.partial``, hooks, calls in lambdas): whoever calls them passes arguments no
call the index reads shows (:mod:`synclint.project.value_references`).

An attribute every store of which is one constant in an ``__init__`` (``self.stratified =
False``, see :mod:`synclint.project.constant_attributes`) closes the blocks its tests guard
for every caller, hot or not: ``if self.stratified:`` never runs. So does ``if args.masks:``
where no one passes ``--masks`` (:mod:`synclint.project.command_flags`). These blocks do
not depend on what calls them: :func:`blocks_closed_by_constants` finds them once, before
the contexts, which tells what classes are built only there
(:mod:`synclint.project.unnamed_classes`).

A flag a caller passes on unchanged (``batched_soft_nms(..., method_gaussian=True)`` ->
``soft_nms(..., method_gaussian=method_gaussian)``) takes the values the caller's own
calls pass, each function on the way under the same rules.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import NamedTuple, TypeVar

from synclint.project.cold_reasons import outside_the_program
from synclint.project.constructor_arguments import constants_with_constructor_arguments
from synclint.project.command_flags import ConstantFlag, given_a_constant_in, options_spelled_in, unpassed_flags
from synclint.project.index import FunctionId, ProjectIndex
from synclint.project.rare_blocks import ParamGuard
from synclint.project.summary import CallSite, FunctionSummary, is_test_file
from synclint.project.mentions import spelled_in

#: Names a notebook spells when it may store an attribute by a computed name.
_COMPUTED_STORES = frozenset({"setattr", "__setattr__", "__dict__", "vars"})
#: What a constant attribute or flag holds (its values, a :class:`ConstantFlag`).
_Named = TypeVar("_Named")
#: What a call passes for a parameter when it is not a constant.
_TENSOR = object()  # a visible tensor: not None, truth and equality unknown
_UNKNOWN = object()

#: (first line, last line, why) of the blocks of one function.
SkippedBlocks = tuple[tuple[int, int, str], ...]

#: How many functions a flag may be passed on through.
_MAX_FORWARDS = 3


def blocks_the_step_skips(
    index: ProjectIndex,
    contexts: Mapping[FunctionId, object],
    quiet_calls: Mapping[int, str],
    closed: Mapping[FunctionId, SkippedBlocks],
) -> dict[FunctionId, SkippedBlocks]:
    """Per function, the blocks none of its calls from hot code enters. ``contexts``
    are the current contexts; ``quiet_calls`` the calls already known to sit in such
    blocks (by identity), which make nothing hot; ``closed`` the blocks a constant never
    lets run, whoever calls (:func:`blocks_closed_by_constants`)."""
    calls = _StepCalls(index, contexts, quiet_calls)
    found: dict[FunctionId, SkippedBlocks] = {}
    for key, entry in index.entries.items():
        for qualname, function in entry.summary.functions.items():
            blocks = list(closed.get((key, qualname), ()))
            if not function.param_guards and not function.tensor_fallbacks and not blocks:
                continue
            for fallback in function.tensor_fallbacks:
                # (A parameter with a default of any kind: a call that leaves it out passes no tensor.)
                defaulted = tuple(param for param in fallback.params if param in function.defaulted)
                if not calls.may_pass_a_non_tensor((key, qualname), function, fallback.params, defaulted):
                    why = (f"not on the step's path (it runs only when `{fallback.name}` is not a tensor, "
                           "and no call from the step passes anything else: a conversion fallback)")
                    blocks.append((fallback.first, fallback.last, why))
            for guard in function.param_guards:
                values = calls.values((key, qualname), function, guard)
                if values is None or any(_may_enter(guard, value) for value in values):
                    continue
                shown = " or ".join(sorted({"a tensor" if value is _TENSOR else repr(value) for value in values}))
                why = f"not on the step's path (its calls from the step pass `{guard.param}={shown}`)"
                blocks.append((guard.first, guard.last, why))
            if blocks:
                found[(key, qualname)] = tuple(blocks)
    return found


class _StepCalls:
    """What the step's calls pass for a parameter, through callers that pass it on."""

    def __init__(self, index: ProjectIndex, contexts: Mapping[FunctionId, object], quiet_calls: Mapping[int, str]):
        self.index = index
        self.contexts = contexts
        self.quiet_calls = quiet_calls
        self.callers = index.callers()
        self.owners = index.call_owners()
        self.passed_as_values = index.passed_as_values()

    def values(self, fid: FunctionId, function: FunctionSummary, guard: ParamGuard, param: str | None = None,
               depth: int = 0) -> list[object] | None:
        """The values the calls of ``fid`` from hot code pass for ``param`` (the guard's
        own parameter at first), or None when that is not known: a step (its callers are
        outside the project), a function passed as a value (``checkpoint(self._inner, x)``:
        called unseen), a value unknown, a call whose arguments may not line up with the
        parameters, or a public function whose default, or a call from code of unknown
        context, may run the block."""
        if function.root is not None or function.name in self.passed_as_values:
            return None
        param = param or guard.param
        params = function.call_params
        if param not in params or param not in function.kept_params:
            return None
        # A keyword-only parameter has no position: ``f(x, 0, check=True)`` passes ``0`` to ``*sizes``.
        position = None if param in function.keyword_only else params.index(param)
        public = not _private(function.name)
        if public and (param not in function.defaults or guard.entered(function.defaults[param])):
            return None  # not an opt-in mode: callers outside the project may run it by default
        hot, unsure = [], []
        for call, plain in self.callers.get(fid, ()):
            if call.quiet is None and id(call) not in self.quiet_calls:
                context = self.contexts.get(self.owners[id(call)])
                if _is_hot(context) or (call.batch_loop is not None and not _cold_on_its_own(context)):
                    hot.append((call, plain))
                elif not getattr(context, "is_cold", False):
                    unsure.append((call, plain))
        if not hot or not all(plain for _call, plain in hot):
            return None  # (arguments line up with parameters only in plain calls)
        if public and any(not plain or _may_enter(guard, _passed(call, position, param, function.defaults))
                          for call, plain in unsure):
            return None  # the project's own code may ask for the mode, where the index cannot tell how often
        found: list[object] = []
        for call, _plain in hot:
            value = _passed(call, position, param, function.defaults)
            if isinstance(value, _Forwarded):
                owner = self.owners[id(call)]
                caller = self.index.function(owner)
                if caller is None or depth >= _MAX_FORWARDS:
                    return None
                passed_on = self.values(owner, caller, guard, value.param, depth + 1)
                if passed_on is None:
                    return None
                found += passed_on
            else:
                found.append(value)
        return found


    def may_pass_a_non_tensor(self, fid: FunctionId, function: FunctionSummary, params: tuple[str, ...],
                              defaulted: tuple[str, ...], depth: int = 0) -> bool:
        """Whether a call of ``fid`` from code that is not cold may pass something other
        than a tensor for one of ``params`` (see :mod:`synclint.project.tensor_fallbacks`):
        a constant (``None`` too), a Python number or a literal container (``[0.5, 0.5]``),
        nothing for one of ``defaulted`` (a default of any kind), or a parameter of its own
        that its callers may pass so. Any other value is taken for a tensor: the block
        converts what the project's step does not pass. Callers the index cannot see may
        leave out a defaulted one (a step's), and a function passed as a value (that is no
        step) may be called with anything. A function that is no step and that no code of
        the project that runs calls is a library's: its callers, all unseen, may pass
        anything."""
        sites = self.callers.get(fid, ())
        passed = function.name in self.passed_as_values or self.index.runs_unseen(fid)
        if function.root is None and passed:
            return True  # (``partial(to_tensor, 0.5)``, ``map(to_tensor, [0.5, 1.0])``: called with what no call shows)
        unseen = function.root is not None or passed
        if defaulted and (unseen or not sites):
            return True
        seen = False
        names = function.call_params
        python_attributes = self.index.constant_attributes(is_test_file)  # (cached by the index)
        for call, plain in sites:
            if call.quiet is not None or id(call) in self.quiet_calls:
                continue
            owner = self.owners[id(call)]
            if getattr(self.contexts.get(owner), "is_cold", False):
                continue
            seen = True
            for param in params:
                position = None if param in function.keyword_only or param not in names else names.index(param)
                value = _argument(call, plain, position, param, python_attributes)
                if value is _OMITTED or value is _UNPACKED:
                    if param in defaulted:
                        return True  # (``*args``/``**kwargs`` may leave it to its default too)
                elif value is _NOT_A_TENSOR:
                    return True
                elif isinstance(value, _Forwarded):
                    caller = self.index.function(owner)
                    if caller is None or depth >= _MAX_FORWARDS:
                        return True
                    own_default = (value.param,) if value.param in caller.defaulted else ()
                    if self.may_pass_a_non_tensor(owner, caller, (value.param,), own_default, depth + 1):
                        return True
        return not seen and function.root is None


#: What a call passes, for :meth:`_StepCalls.may_pass_a_non_tensor`: nothing, or a value
#: that is no tensor (a constant, a Python number).
_OMITTED = object()
_NOT_A_TENSOR = object()
#: Not given by name or position where ``*args``/``**kwargs`` pass more: anything, or nothing.
_UNPACKED = object()


def _argument(call: CallSite, plain: bool, position: int | None, param: str,
              python_attributes: Collection[str] = ()) -> object:
    """What ``call`` passes for the parameter: :data:`_OMITTED`, :data:`_NOT_A_TENSOR`,
    :data:`_UNPACKED`, a :class:`_Forwarded` parameter, or :data:`_UNKNOWN` (a tensor, or
    anything else). ``python_attributes``: attributes of ``self`` that only ever hold
    constants (``self.t_max = 999``), no tensor. A call that is not plain
    (``Cls.method(obj, t)``) may bind its arguments one position later: either position
    counts."""
    places = {param}
    if position is not None:
        places.update((position,) if plain else (position, position + 1))
    given = [(where, value) for where, value in call.constants if where in places]
    if not given:
        if any(where == "*" for where, _value in call.constants):
            return _UNPACKED  # ``*args`` / ``**kwargs`` may pass it, or leave it out
        return _OMITTED
    for where, value in given:
        if value or where in call.number_args or where in call.literal_args or any(
                at == where and name in python_attributes for at, name in call.attribute_args):
            return _NOT_A_TENSOR
    if plain or len(given) == 1:
        where = given[0][0]
        forwarded = next((name for at, name in call.forwarded if at == where), None)
        if forwarded is not None:
            return _Forwarded(forwarded)
    return _UNKNOWN


def constant_attributes(index: ProjectIndex, split: bool, whole_project: bool = False) -> dict[str, frozenset[object]]:
    """The attributes that hold only the constants an ``__init__`` stores in them (see
    :mod:`synclint.project.constant_attributes`), or, in a ``whole_project``, that every
    construction of their class passes (:mod:`synclint.project.constructor_arguments`): none in one piece of a ``split`` project,
    whose other pieces may store any; none a notebook of the project names, whose cells
    (never indexed) may store it; none at all when a notebook may store one by a computed
    name."""
    if split:
        return {}
    named = (constants_with_constructor_arguments(index, is_test_file) if whole_project
             else index.constant_attributes(is_test_file))
    return _unspelled_in_notebooks(index, named)


def _unspelled_in_notebooks(index: ProjectIndex, named: dict[str, _Named]) -> dict[str, _Named]:
    """Those of ``named`` (attributes or flags, by name) that no notebook of the project
    spells: its cells, which the index never reads, may store them. None at all when a
    notebook may store attributes by a computed name."""
    notebooks = [path for path in index.naming_files if path.endswith(".ipynb")]
    if not named or not notebooks:
        return named
    spelled = spelled_in(notebooks, {*named, *_COMPUTED_STORES})
    if spelled & _COMPUTED_STORES:
        return {}
    return {name: value for name, value in named.items() if name not in spelled}


def blocks_closed_by_constants(
    index: ProjectIndex, split: bool, whole_project: bool
) -> dict[FunctionId, SkippedBlocks]:
    """Per function, the blocks that a test of a constant never lets run, whoever calls
    it: of an attribute only ever set to one constant (:func:`constant_attributes`), of a
    command-line flag no one passes (:func:`constant_flags`, asked only of a ``whole_project``)."""
    constants = constant_attributes(index, split, whole_project)
    flags = constant_flags(index) if whole_project and not split else {}
    found: dict[FunctionId, SkippedBlocks] = {}
    if not constants and not flags:
        return found
    # (``def build(args):`` reads a flag on ``args`` when the project binds ``args`` from ``parse_args``.)
    receivers = set().union(*(entry.summary.command_line.parsed_names for entry in index.entries.values()))
    named = values_named_in_documents(index, flags)
    # (Constant only through what every construction passes: said so in the why.)
    stored = index.constant_attributes(is_test_file)
    constructed = {name for name, values in constants.items() if stored.get(name) != values}
    for key, entry in index.entries.items():
        for qualname, function in entry.summary.functions.items():
            blocks = _closed_by_constants(index, (key, qualname), function, constants, constructed)
            blocks += _closed_by_flags(function, flags, receivers, named)
            if blocks:
                found[(key, qualname)] = tuple(blocks)
    return found


def constant_flags(index: ProjectIndex) -> dict[str, ConstantFlag]:
    """The command-line flags that keep their constant defaults (see
    :mod:`synclint.project.command_flags`), among those some guard tests; none a notebook
    spells (its cells may store it), none at all when a notebook may store attributes by
    a computed name."""
    wanted = {guard.param.rpartition(".")[2] for entry in index.entries.values()
              for function in entry.summary.functions.values() for guard in function.flag_guards}
    if not wanted:
        return {}
    files = [(entry.summary.command_line, not is_test_file(key), frozenset(entry.summary.attribute_stores))
             for key, entry in index.entries.items()]
    # (``setattr(self, name, layer)`` stores on instances of its class, never on a parsed namespace.)
    stored_by_computed_name = any(entry.summary.stores_on_others_by_computed_name
                                  for key, entry in index.entries.items() if not is_test_file(key))
    if stored_by_computed_name:
        return {}
    flags = unpassed_flags(files, lambda: options_spelled_in(index.naming_files), wanted)
    # A configuration file that names the flag as a key (``masks: true``) may set it on a
    # namespace built from the file (``args = EasyDict(yaml.safe_load(f))``) under the same
    # parameter name: the word is enough to keep it.
    configs = [path for path in index.naming_files if path.endswith(_CONFIG_SUFFIXES)]
    if flags and configs:
        named = spelled_in(configs, set(flags))
        flags = {dest: flag for dest, flag in flags.items() if dest not in named}
    # So may a Python file that gives the name a constant (``EasyDict(masks=True)``, a
    # Python configuration file's ``masks = True``).
    if flags:
        given = given_a_constant_in(index.entries, set(flags))
        flags = {dest: flag for dest, flag in flags.items() if dest not in given}
    return _unspelled_in_notebooks(index, flags)


#: Configuration files, whose keys may set a flag of a namespace built from them.
_CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".cfg", ".ini")


def _closed_by_constants(
    index: ProjectIndex, fid: FunctionId, function: FunctionSummary, constants: Mapping[str, frozenset[object]],
    constructed: Collection[str] = (),
) -> list[tuple[int, int, str]]:
    """The blocks of method ``fid`` that a test of a constant attribute never lets run
    (``if self.stratified:`` where ``__init__`` sets it to ``False`` and nothing else sets
    it), unless a library's base class, whose methods may store it, is among its class's.
    ``constructed``: the attributes constant only through what their class's constructions
    pass (see :mod:`synclint.project.constructor_arguments`)."""
    blocks = []
    for guard in function.attribute_guards:
        name = guard.param.removeprefix("self.")
        values = constants.get(name)
        if values and not any(guard.entered(value) for value in values):
            shown = " or ".join(sorted(map(repr, values)))
            source = ("what every construction of its class passes to `__init__`" if name in constructed
                      else "what `__init__` stores")
            blocks.append((guard.first, guard.last,
                           f"never runs: `{guard.param}` is only ever {shown} ({source}; nothing sets it again)"))
    if blocks and index.derives_from_a_library((fid[0], fid[1].rpartition(".")[0])):
        return []
    return blocks


def values_named_in_documents(index: ProjectIndex, flags: Mapping[str, ConstantFlag]) -> dict[str, frozenset[str]]:
    """Per flag of ``flags``, the string values its tests select (``if args.hier ==
    "bottom":``; not its defaults) that a document, script or configuration of the
    project names as a word: vq-vae-2's README tells of its "top/bottom hierarchical
    prior", whose bottom half ``--hier bottom`` trains, though no text shows the option.
    Users told of a mode may choose it: the flag may hold it."""
    selected: dict[str, set[str]] = {}
    for entry in index.entries.values():
        for function in entry.summary.functions.values():
            for guard in function.flag_guards:
                dest = guard.param.rpartition(".")[2]
                if (guard.test == "eq" and isinstance(guard.constant, str) and guard.constant and dest in flags
                        and guard.constant not in flags[dest].values):
                    selected.setdefault(dest, set()).add(guard.constant)
    if not selected:
        return {}
    named = spelled_in(index.naming_files, set().union(*selected.values()))
    return {dest: frozenset(values & named) for dest, values in selected.items() if values & named}


def _closed_by_flags(
    function: FunctionSummary, flags: Mapping[str, ConstantFlag], receivers: set[str],
    documented: Mapping[str, frozenset[str]]
) -> list[tuple[int, int, str]]:
    """The blocks of ``function`` that a test of a flag no one passes never lets run
    (``if args.masks:``), read on a name bound from ``parse_args``, or on a parameter or
    an attribute of ``self`` (``self.opt.masks``) of the name of one, for its default or
    a value ``documented`` (:func:`values_named_in_documents`)."""
    blocks = []
    for guard in function.flag_guards:
        receiver, _dot, dest = guard.param.rpartition(".")
        flag = flags.get(dest)
        named = receiver.removeprefix("self.")
        if flag is None or ((named != receiver or receiver in function.params) and named not in receivers):
            continue
        if not any(guard.entered(value) for value in flag.values | documented.get(dest, frozenset())):
            shown = " or ".join(sorted(map(repr, flag.values)))
            blocks.append((guard.first, guard.last,
                           f"never runs: `{flag.option}` is never passed, so `{guard.param}` is always {shown} "
                           f"(its default; nothing in the project passes or sets it)"))
    return blocks


def _is_hot(context: object) -> bool:
    return context is not None and getattr(context, "is_hot", False)


def _cold_on_its_own(context: object) -> bool:
    """Cold for a reason of its own (an error path), or no part of the program (test code,
    or called only from it: :func:`outside_the_program`), not only because its callers run
    rarely: the loops over batches of an evaluation called every N steps still run every
    batch of it, and their calls are the step's (as the call graph has them)."""
    if not getattr(context, "is_cold", False):
        return False
    why = getattr(context, "why", "")
    return not why.startswith("called only") or outside_the_program(why)


def _may_enter(guard: ParamGuard, value: object) -> bool:
    if value is _UNKNOWN or isinstance(value, _Forwarded):
        return True
    if value is _TENSOR:
        return guard.test != "none" or guard.entered(_TENSOR)  # a tensor is not None
    return guard.entered(value)


class _Forwarded(NamedTuple):
    """An argument that passes on the caller's own parameter unchanged."""

    param: str


def _passed(call: CallSite, position: int | None, param: str, defaults: Mapping[str, object]) -> object:
    """What ``call`` passes for the parameter: a constant's value (the default when it
    passes nothing), :data:`_TENSOR`, a :class:`_Forwarded` parameter, or :data:`_UNKNOWN`."""
    for where, value in call.constants:
        if where == "*":
            return _UNKNOWN  # ``*args`` / ``**kwargs``: it may pass the parameter
        if where == param or (position is not None and where == position):
            if value:
                return value[0]
            forwarded = next((name for at, name in call.forwarded if at == where), None)
            if forwarded is not None:
                return _Forwarded(forwarded)
            return _TENSOR if where in call.tensor_args else _UNKNOWN
    return defaults.get(param, _UNKNOWN)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")
