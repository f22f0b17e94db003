"""The project index: every file's summary, with its imports resolved across the project.

Built from the project's files (see :mod:`synclint.project.layout`), not from
the files named on the command line, so pre-commit (which names only the
changed files) sees the same call graph as a full run. Summaries are cached by
content hash (:mod:`synclint.project.store`); resolving and the hotness pass
(:mod:`synclint.project.hotness`) are recomputed each run, which is cheap.
"""

from __future__ import annotations

import builtins
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from synclint.project.constant_attributes import STORE_NO_FLAG, constant_attributes
from synclint.project.layout import is_package_init, module_names, natural_root, parts_inside
from synclint.project.summary import CallSite, ClassSummary, FileSummary, FunctionSummary

FunctionId = tuple[str, str]  # (file key, qualname)
#: Method names too common across libraries to resolve by name alone.
_COMMON_METHODS = frozenset(
    {"forward", "step", "update", "reset", "apply", "append", "extend", "items", "values", "get", "pop",
     "clear", "copy", "format", "split", "join", "close", "write", "read", "start", "stop", "state_dict",
     "load_state_dict", "parameters", "named_parameters", "modules", "children", "train", "eval",
     "backward", "zero_grad", "compute", "predict", "encode", "decode", "sample", "build", "setup",
     "register", "add_module", "numpy", "tolist", "item", "cuda", "float", "half", "double", "detach",
     "clone", "reshape", "view", "permute", "transpose", "flatten", "squeeze", "unsqueeze", "mean",
     "count", "index", "remove", "insert", "sort", "keys", "update_state", "log", "info", "debug",
     "warning", "error", "flush", "save", "load", "run", "call", "process", "transform", "fit", "score"}
)
ClassId = tuple[str, str]


class UnresolvedCalls(NamedTuple):
    """What the project calls that the index resolves to no function, by the name called."""

    #: Plain calls (``report(x)`` after ``from utils import *``): a function may run from them.
    names: frozenset[str]
    #: Attribute calls: the method names of ``meters["loss"].update(x)`` (see
    #: :attr:`FileSummary.unspelled_calls`) and of dotted ones that name nothing the index
    #: knows (``self.update(x)`` in a class that leaves ``update`` to a subclass's other
    #: base): a method may run from them.
    attributes: frozenset[str]


@dataclass
class ModuleEntry:
    key: str  # the file's resolved path: the same however it was named
    name: str  # the dotted name relative imports are resolved against
    package: str  # the package relative imports start from
    summary: FileSummary


def _leaves_out(call: CallSite, wheres: tuple[int | str, ...]) -> bool:
    """The call passes nothing at any of ``wheres`` (nor ``*args``/``**kwargs`` that might)."""
    passed = {where for where, _value in call.constants}
    return "*" not in passed and not passed.intersection(wheres)


def argument_places(function: FunctionSummary, position: int, name: str) -> tuple[int | str, ...]:
    """Where a call passes ``function``'s parameter ``name`` (at ``position``, counted
    without ``self``): its position, unless it is keyword-only (``f(x, *rest, n)`` lists
    another argument there), and its name, unless it is positional-only (``n=`` then goes
    to ``**kwargs``)."""
    return (
        *(() if name in function.keyword_only else (position,)),
        *(() if name in function.positional_only else (name,)),
    )


class ProjectIndex:
    def __init__(self, summaries: dict[str, FileSummary], root: Path, naming_files: tuple[str, ...] = ()) -> None:
        self.root = root
        #: The project's configuration files, scripts and documentation pages
        #: (:func:`synclint.project.layout.naming_files`), read only to ask whether they
        #: name a class (:mod:`synclint.project.unnamed_classes`).
        self.naming_files = naming_files
        self.entries: dict[str, ModuleEntry] = {}
        self.modules: dict[str, str] = {}  # dotted name -> file key
        self._method_owners: dict[str, list[FunctionId]] | None = None
        self._dotted_cache: dict[tuple[str, str], tuple[str, str | None, str | None]] = {}
        self._nested_name_cache: dict[str, frozenset[str]] = {}
        self._calls: dict[FunctionId, list[tuple[CallSite, FunctionId]]] | None = None
        #: (call by identity, callee) of the calls that reach a subclass's override (see
        #: :meth:`resolved_calls`), and of no other call.
        self._dispatched: set[tuple[int, FunctionId]] = set()
        self._callers: dict[FunctionId, list[tuple[CallSite, bool]]] | None = None
        self._fanout: dict[int, int] | None = None
        self._host_parameters: frozenset[tuple[FunctionId, str]] | None = None
        self._number_parameters: frozenset[tuple[FunctionId, str]] | None = None
        self._loose_classes: frozenset[ClassId] | None = None
        self._constructions: dict[ClassId, list[tuple[CallSite, FunctionId]]] | None = None
        self._handed_attributes: frozenset[str] | None = None
        self._constant_attributes: dict[str, frozenset[object]] | None = None
        self._owners: dict[int, FunctionId] | None = None
        self._subclasses: dict[ClassId, list[ClassId]] | None = None
        self._passed_as_values: frozenset[str] | None = None
        self._unresolved_calls: UnresolvedCalls | None = None
        #: Each file's :meth:`relative_parts`: asked once per call site that passes a host tensor.
        self._relative_parts: dict[str, tuple[str, ...]] = {}
        self._natural_root: Path | None = None
        tops: dict[Path, Path | None] = {}
        for key in sorted(summaries):
            file = Path(key)
            names = module_names(file, root, tops)
            name = names[0]
            package = name if is_package_init(file) else name.rpartition(".")[0]
            self.entries[key] = ModuleEntry(key, name, package, summaries[key])
            for alias in names:
                self.modules.setdefault(alias, key)

    # -- lookups ---------------------------------------------------------------------
    def relative_parts(self, key: str) -> tuple[str, ...]:
        """The file's path inside the project root (before a huge tree was split), as parts."""
        parts = self._relative_parts.get(key)
        if parts is None:
            if self._natural_root is None:
                self._natural_root = natural_root(self.root)  # looks for marker files upwards
            parts = parts_inside(key, self._natural_root)
            self._relative_parts[key] = parts
        return parts

    def function(self, fid: FunctionId) -> FunctionSummary | None:
        entry = self.entries.get(fid[0])
        return entry.summary.functions.get(fid[1]) if entry is not None else None

    def klass(self, cid: ClassId) -> ClassSummary | None:
        entry = self.entries.get(cid[0])
        return entry.summary.classes.get(cid[1]) if entry is not None else None

    def label(self, fid: FunctionId) -> str:
        entry = self.entries.get(fid[0])
        module = entry.name if entry is not None else "?"
        return f"{module}.{fid[1]}" if fid[1] != "<module>" else module

    # -- resolution ----------------------------------------------------------------------
    def resolve_import(self, key: str, local: str) -> tuple[str | None, str | None]:
        """(file key of the module, name inside it or None) that ``local`` names in file ``key``."""
        entry = self.entries[key]
        imported = entry.summary.imports.get(local)
        if imported is None:
            return None, None
        level, module, name = imported
        module = self.absolute_module(key, level, module)
        if name is None:
            return self.modules.get(module), None
        submodule = self.modules.get(f"{module}.{name}" if module else name)
        if submodule is not None:
            return submodule, None  # ``from pkg import module``
        return self.modules.get(module), name

    def absolute_module(self, key: str, level: int, module: str) -> str:
        """The dotted name an import of ``module`` at ``level`` (dots) in file ``key`` names."""
        if not level:
            return module
        package = self.entries[key].package
        base = package.split(".") if package else []
        if level > 1:
            base = base[: len(base) - (level - 1)] if level - 1 <= len(base) else []
        return ".".join([*base, module] if module else base)

    def resolve_name(self, key: str, scope: str, name: str, depth: int = 0) -> tuple[str, str | None, str | None]:
        """What ``name`` used in function ``scope`` of file ``key`` is.

        Returns (kind, file key, qualname): kind is "function", "class", "module" or "none".
        """
        entry = self.entries.get(key)
        if entry is None or depth > 8:
            return "none", None, None
        summary = entry.summary
        # Nested functions first, then the module's own definitions, then imports.
        parts = scope.split(".") if scope and scope != "<module>" else []
        for cut in range(len(parts), -1, -1):
            candidate = ".".join([*parts[:cut], name])
            if candidate in summary.functions and candidate != scope:
                return "function", key, candidate
            if candidate in summary.classes:
                return "class", key, candidate
        target, inner = self.resolve_import(key, name)
        if target is None:
            return "none", None, None
        if inner is None:
            return "module", target, None
        return self.resolve_name(target, "", inner, depth + 1)

    def resolve_dotted(self, key: str, scope: str, text: str) -> tuple[str, str | None, str | None]:
        """Resolve ``a.b.c`` from file ``key``: modules, then classes, then functions."""
        if scope and scope != "<module>" and self._nested(key, scope, text.partition(".")[0]):
            return self._resolve_dotted(key, scope, text)
        cache_key = (key, text)
        found = self._dotted_cache.get(cache_key)
        if found is None:
            found = self._dotted_cache[cache_key] = self._resolve_dotted(key, "", text)
        return found

    def _nested(self, key: str, scope: str, name: str) -> bool:
        """``name`` is a function or class nested in ``scope`` (or an enclosing function)."""
        if name not in self._nested_names(key):
            return False  # (most names a call starts with: ``torch``, ``self``, ``F``)
        summary = self.entries[key].summary
        parts = scope.split(".")
        for cut in range(len(parts), 0, -1):
            candidate = ".".join([*parts[:cut], name])
            if candidate in summary.functions or candidate in summary.classes:
                return True
        return False

    def _nested_names(self, key: str) -> frozenset[str]:
        """The last part of every dotted qualname of a function or class of file ``key``:
        the only names :meth:`_nested` can find (its candidates are ``scope.name``)."""
        names = self._nested_name_cache.get(key)
        if names is None:
            summary = self.entries[key].summary
            names = frozenset(qualname.rpartition(".")[2] for qualname in (*summary.functions, *summary.classes)
                              if "." in qualname)
            self._nested_name_cache[key] = names
        return names

    def _resolve_dotted(self, key: str, scope: str, text: str) -> tuple[str, str | None, str | None]:
        head, *rest = text.split(".")
        kind, target, qualname = self.resolve_name(key, scope, head)
        for part in rest:
            if kind == "module" and target is not None:
                summary = self.entries[target].summary
                if part in summary.functions:
                    kind, qualname = "function", part
                elif part in summary.classes:
                    kind, qualname = "class", part
                else:
                    name = self.entries[target].name
                    submodule = self.modules.get(f"{name}.{part}")
                    if submodule is not None:
                        kind, target, qualname = "module", submodule, None
                    else:
                        inner_kind, inner_target, inner_name = self.resolve_name(target, "", part)
                        if inner_kind == "none":
                            return "none", None, None
                        kind, target, qualname = inner_kind, inner_target, inner_name
            elif kind == "class" and target is not None and qualname is not None:
                method = self.method(target, qualname, part)
                if method is None:
                    return "none", None, None
                kind, target, qualname = "function", method[0], method[1]
            else:
                return "none", None, None
        return kind, target, qualname

    def class_bases(self, cid: ClassId, depth: int = 0) -> list[ClassId]:
        """``cid`` and its project base classes, nearest first."""
        found = [cid]
        klass = self.klass(cid)
        if klass is None or depth > 10:
            return found
        for base in klass.bases:
            if not base:
                continue
            kind, target, qualname = self.resolve_dotted(cid[0], "", base)
            if kind == "class" and target is not None and qualname is not None and (target, qualname) != cid:
                for ancestor in self.class_bases((target, qualname), depth + 1):
                    if ancestor not in found:
                        found.append(ancestor)
        return found

    def derives_from_a_library(self, cid: ClassId) -> bool:
        """Whether ``cid`` or a project base of it derives from a class neither the project
        nor torch nor the standard library defines (timm's ``VisionTransformer``, Lightning's
        ``LightningModule``): that class's methods, which the index never reads, may store
        any attribute of the instance (``model.set_grad_checkpointing(True)``)."""
        for ancestor in self.class_bases(cid):
            klass = self.klass(ancestor)
            for base in klass.bases if klass is not None else ():
                if base and self.resolve_dotted(ancestor[0], "", base)[0] != "class" and self._library_class(ancestor[0], base):
                    return True
        return False

    def _library_class(self, key: str, base: str) -> bool:
        head, _, rest = base.partition(".")
        imported = self.entries[key].summary.imports.get(head)
        if imported is None:  # a builtin (``object``), or a name the file computes: anything
            return not hasattr(builtins, head)
        level, module, name = imported
        dotted = ".".join(part for part in (module, name, rest) if part)
        return bool(level) or dotted.partition(".")[0] not in STORE_NO_FLAG

    def method(self, key: str, class_name: str, name: str, skip_own: bool = False) -> FunctionId | None:
        """The method ``name`` of a class or its nearest project base defining it."""
        chain = self.class_bases((key, class_name))
        for cid in chain[1:] if skip_own else chain:
            klass = self.klass(cid)
            if klass is not None and name in klass.methods:
                return cid[0], f"{cid[1]}.{name}"
        return None

    def module_attr_class(self, key: str, class_name: str, attr: str) -> ClassId | None:
        """The class ``self.<attr>`` is built from, when it is a project class."""
        for cid in self.class_bases((key, class_name)):
            klass = self.klass(cid)
            if klass is None or attr not in klass.module_attrs:
                continue
            kind, target, qualname = self.resolve_dotted(cid[0], "", klass.module_attrs[attr])
            if kind == "class" and target is not None and qualname is not None:
                return target, qualname
            return None
        return None

    def resolve_call(self, key: str, function: FunctionSummary, target: str) -> FunctionId | None:
        """The project function a call of ``target`` in ``function`` runs, when known."""
        head, _, rest = target.partition(".")
        cls = function.cls
        if cls is not None and head in ("self", "cls") and rest:
            name, _, more = rest.partition(".")
            if not more:
                method = self.method(key, cls, name)
                if method is not None:
                    return method
                attr_class = self.module_attr_class(key, cls, name)
                if attr_class is not None:
                    return self._call_target_of_instance(attr_class)
                return None
            if "." in more:
                return None
            attr_class = self.module_attr_class(key, cls, name)
            if attr_class is not None:
                return self.method(attr_class[0], attr_class[1], more)
            # ``self.schedule_sampler.update_with_local_losses(...)``, the attribute's class
            # unknown (a constructor argument): the one project method of that name.
            return self.unique_method(more)
        if head == "super" and cls is not None and rest and "." not in rest:
            return self.method(key, cls, rest, skip_own=True)
        kind, found, qualname = self.resolve_dotted(key, function.qualname, target)
        if kind == "function" and found is not None and qualname is not None:
            return found, qualname
        if kind == "none" and "." in target and not self._module_attribute(key, function.qualname, target):
            return self.unique_method(target.rsplit(".", 1)[1])
        return None

    def _module_attribute(self, key: str, scope: str, target: str) -> bool:
        """``dist.gather(...)`` after ``import torch.distributed as dist``: an attribute of a
        module (a project module whose star imports the index does not follow, or any
        module outside the project), so a function of that module, never the method of
        whichever project class happens to be the only one to define ``gather``."""
        owner = target.rsplit(".", 1)[0]
        if self.resolve_dotted(key, scope, owner)[0] == "module":
            return True
        head = owner.partition(".")[0]
        imported = self.entries[key].summary.imports.get(head)
        return imported is not None and imported[2] is None and not self._nested(key, scope, head)

    def resolved_calls(self) -> dict[FunctionId, list[tuple[CallSite, FunctionId]]]:
        """Every function's calls that resolve to a project function (computed once)."""
        if self._calls is None:
            calls: dict[FunctionId, list[tuple[CallSite, FunctionId]]] = {}
            for key, entry in self.entries.items():
                for qualname, function in entry.summary.functions.items():
                    found = []
                    for call in function.calls:
                        callee = self.resolve_call(key, function, call.target)
                        if callee is not None:
                            found.append((call, callee))
                        if function.cls is not None and call.target.startswith("self.") and call.target.count(".") == 1:
                            # ``self.update(x)`` in a base class runs the subclasses' overrides too
                            for override in self.overrides(key, function.cls, call.target[5:]):
                                if override != callee:
                                    found.append((call, override))
                                    self._dispatched.add((id(call), override))
                    calls[(key, qualname)] = found
            self._calls = calls
        return self._calls

    def dispatched(self, call: CallSite, callee: FunctionId) -> bool:
        """``callee`` is what ``call`` reaches only as a subclass's override of the method it
        names (``self.preprocess_batch(x)`` in a base class: ``Sub.preprocess_batch``), which
        runs only on an instance of that subclass (see :meth:`resolved_calls`)."""
        self.resolved_calls()
        return (id(call), callee) in self._dispatched

    def subclasses(self, cid: ClassId) -> list[ClassId]:
        """The project subclasses of a class (transitively)."""
        if self._subclasses is None:
            children: dict[ClassId, list[ClassId]] = {}
            for file_key, entry in self.entries.items():
                for cls_name in entry.summary.classes:
                    for base in self.class_bases((file_key, cls_name))[1:]:
                        children.setdefault(base, []).append((file_key, cls_name))
            self._subclasses = children
        return self._subclasses.get(cid, [])

    def overrides(self, key: str, class_name: str, name: str) -> list[FunctionId]:
        """``name`` as defined by the project subclasses of a class (transitively)."""
        found = []
        for sub in self.subclasses((key, class_name)):
            klass = self.klass(sub)
            if klass is not None and name in klass.methods:
                found.append((sub[0], f"{sub[1]}.{name}"))
        return sorted(set(found))

    def callers(self) -> dict[FunctionId, list[tuple[CallSite, bool]]]:
        """Per function, its call sites, each with whether its arguments line up with the
        parameters (a plain call of a function, or ``self.method(...)``)."""
        if self._callers is None:
            callers: dict[FunctionId, list[tuple[CallSite, bool]]] = {}
            for (key, qualname), calls in self.resolved_calls().items():
                for call, callee in calls:
                    target = self.function(callee)
                    plain = target is not None and (
                        (target.cls is None and not call.target.startswith(("self.", "cls.")))
                        or (target.cls is not None and call.target.count(".") == 1 and call.target.startswith("self."))
                    )
                    callers.setdefault(callee, []).append((call, plain))
            self._callers = callers
        return self._callers

    def binds_every_call(self, fid: FunctionId) -> bool:
        """The project calls ``fid`` (at least once), and every call's arguments line up
        with its parameters: what each call passes is known at the call."""
        sites = self.callers().get(fid)
        if not sites:
            return False
        if self._fanout is None:  # calls that run several functions (``self.update`` and its overrides)
            fanout: dict[int, int] = {}
            for calls in self.resolved_calls().values():
                for call, _callee in calls:
                    fanout[id(call)] = fanout.get(id(call), 0) + 1
            self._fanout = fanout
        return all(plain and self._fanout.get(id(call)) == 1 for call, plain in sites)

    def superseded(self, fid: FunctionId) -> bool:
        """A base-class method the project never runs: nothing in the project calls it,
        and every project subclass overrides it (``RNNBase.check_forward_args``, replaced
        by ``LSTM``'s and ``GRU``'s). Only subclasses outside the project could run it. Never
        a step or a dunder (``forward``, ``__call__``): they run without a call the index
        sees, on the base class itself too (``Base()`` built directly or from a registry)."""
        function = self.function(fid)
        if function is None or function.cls is None or self.callers().get(fid):
            return False
        if function.root is not None or function.name == "forward" or function.name.startswith("__"):
            return False  # run without a call the index sees: ``model(x)`` of the base class itself
        class_name = fid[1].rpartition(".")[0]
        subclasses = self.subclasses((fid[0], class_name))
        return bool(subclasses) and all(self.method(sub[0], sub[1], function.name) != fid for sub in subclasses)

    def unique_method(self, name: str) -> FunctionId | None:
        """``obj.grid_anchors(...)`` on an object of unknown class: the one project
        method of that name, when exactly one class defines it and the name is not
        one every other library uses (``update``, ``step``, ``forward``)."""
        if self._method_owners is None:
            owners: dict[str, list[FunctionId]] = {}
            for key, entry in self.entries.items():
                for class_name, klass in entry.summary.classes.items():
                    for method in klass.methods:
                        owners.setdefault(method, []).append((key, f"{class_name}.{method}"))
            self._method_owners = owners
        if name.startswith("__") or name in _COMMON_METHODS or len(name) < 5:
            return None
        found = self._method_owners.get(name, ())
        return found[0] if len(found) == 1 else None

    def _call_target_of_instance(self, cid: ClassId) -> FunctionId | None:
        """Calling an instance runs ``forward`` (nn.Module) or ``__call__``."""
        return self.method(cid[0], cid[1], "forward") or self.method(cid[0], cid[1], "__call__")

    def host_attributes(self, key: str, class_name: str) -> frozenset[str]:
        """Attributes of a class (or its project bases) that hold host tensors."""
        found: set[str] = set()
        for cid in reversed(self.class_bases((key, class_name))):
            klass = self.klass(cid)
            if klass is not None:
                found -= set(klass.module_attrs)
                found |= klass.host_attrs
        return frozenset(found)

    def host_parameters(self, ignored: Callable[[str], bool] = lambda key: False) -> frozenset[tuple[FunctionId, str]]:
        """Parameters every project call site (at least one) passes a host tensor: a local
        holding one (``batch_sizes`` of a ``PackedSequence``), or a parameter of the caller
        that is such a parameter itself (``check_forward_args(input, hx, batch_sizes)``
        passing it on to ``get_expected_hidden_size(input, batch_sizes)``).

        Only parameters the callee never rebinds count; call sites in files ``ignored``
        says (tests: they feed examples made on the host) do not, nor those in a
        :meth:`superseded` method (the project never runs them); computed once, to a fixpoint.
        """
        if self._host_parameters is None:
            self._host_parameters = self._parameters_every_call_passes("host_args", ignored)
        return self._host_parameters

    def number_parameters(self, ignored: Callable[[str], bool] = lambda key: False) -> frozenset[tuple[FunctionId, str]]:
        """Parameters every project call site (at least one) passes a Python number
        (``self.bias(n, device)`` after ``b, n = x.shape[:2]``), directly or through a
        parameter of the caller that is such a parameter itself, or leaves to a constant
        default (``scale=None`` that no call passes: ``if scale:`` tests ``None``); as
        :meth:`host_parameters` otherwise. A function passed as a value (``functools.partial(_scale, n)``) may run with
        arguments no call shows: its parameters are left out (see :meth:`runs_unseen`)."""
        if self._number_parameters is None:
            # ``self.einops_from`` that an ``__init__`` only ever sets to ``'b (f n) d'``.
            python_attributes = frozenset(name for name, values in self.constant_attributes(ignored).items() if values)
            self._number_parameters = frozenset(
                (callee, name)
                for callee, name in self._parameters_every_call_passes("number_args", ignored, python_attributes)
                if not self.runs_unseen(callee)
            )
        return self._number_parameters

    def runs_unseen(self, fid: FunctionId) -> bool:
        """Whether ``fid`` may run from a call the index does not see: the project passes a
        function of its name as a value, or, for a module's ``forward``/``__call__``, builds
        an instance the index cannot follow (see :meth:`_instances_followed`). (Not the
        passed-as-value test for those: ``forward`` is handed about generically, and the
        attributes that hold modules are passed to ``exists(self.bias)``-style tests everywhere.)"""
        owner, _, name = fid[1].rpartition(".")
        if name in ("forward", "__call__"):
            return not self._instances_followed((fid[0], owner))
        return name in self.passed_as_values() or name in self.handed_attributes()

    def _built_unseen(self, cid: ClassId) -> bool:
        """The class, or a project subclass, is handed to a decorator (``@BLOCKS.register``)
        or passed as a value (``{"basic": Block}``): the project may build it where the index
        sees no class built (``BLOCKS[kind]()``), and run it with any arguments."""
        for sub in [cid, *self.subclasses(cid)]:
            klass = self.klass(sub)
            if klass is not None and (klass.decorated or klass.name in self.passed_as_values()):
                return True
        return False

    def _attributes_held_otherwise(self, key: str, class_name: str, calls: list[CallSite]) -> set[ClassId]:
        """The classes a subclass builds for an attribute that a method of ``class_name``
        calls (``self.bias(x)``) as something else, or as nothing the index knows: on an
        instance of the subclass, that call runs the subclass's module, unresolved."""
        found: set[ClassId] = set()
        subclasses = self.subclasses((key, class_name))
        if not subclasses:
            return found
        for call in calls:
            head, _, attr = call.target.partition(".")
            if head != "self" or not attr or "." in attr:
                continue
            resolved = self.module_attr_class(key, class_name, attr)
            for sub in subclasses:
                held = self.module_attr_class(sub[0], sub[1], attr)
                if held is not None and held != resolved:
                    found.add(held)
        return found

    def handed_attributes(self) -> frozenset[str]:
        """Attributes of ``self`` any file hands on, or calls from a nested scope (see
        :attr:`FileSummary.handed_attributes`): a method or module they name may run with
        arguments no resolved call shows (``getattr(self, "positions")(t)``)."""
        if self._handed_attributes is None:
            self._handed_attributes = frozenset().union(*(entry.summary.handed_attributes for entry in self.entries.values()))
        return self._handed_attributes

    def _instances_followed(self, cid: ClassId) -> bool:
        """Every instance of the class, or of a project subclass, that the project builds is
        held by a module attribute (``self.bias = Bias(4)``, ``... if flag else None``) that
        the index takes for an instance of that class (:meth:`module_attr_class`: not the
        second class a method assigns to the attribute): ``self.bias(...)`` is then a call
        it resolves. An instance built into an
        ``nn.ModuleList``/``nn.Sequential``/dict, handed to a wrapper (``DDP(...)``,
        ``torch.compile(...)``) or kept in a local runs from calls it does not resolve
        (``for block in self.blocks: block(x)``); so does one whose attribute is handed on
        (``checkpoint(self.bias, x)``, see :attr:`FileSummary.handed_attributes`), or that a
        base class calls under another class's name (:meth:`_attributes_held_otherwise`)."""
        if self._loose_classes is None:
            loose: set[ClassId] = set()
            handed = self.handed_attributes()
            for key, entry in self.entries.items():
                for class_name, klass in entry.summary.classes.items():
                    for attr in handed.intersection(klass.module_attrs):
                        held = self.module_attr_class(key, class_name, attr)
                        if held is not None:
                            loose.add(held)
                for function in entry.summary.functions.values():
                    if function.cls is not None:
                        loose.update(self._attributes_held_otherwise(key, function.cls, function.calls))
            for built, sites in self.constructions().items():
                for call, (key, qualname) in sites:
                    function = self.function((key, qualname))
                    held = call.held_by and function is not None and function.cls is not None and (
                        self.module_attr_class(key, function.cls, call.held_by) == built
                    )
                    if not held:
                        loose.add(built)
            self._loose_classes = frozenset(loose)
        return not any(built in self._loose_classes for built in [cid, *self.subclasses(cid)])

    def constructions(self) -> dict[ClassId, list[tuple[CallSite, FunctionId]]]:
        """Per project class, the calls that build it (``Head(4)``, ``model.Head(4)``), each
        with the function it sits in, in the index's order; resolved once."""
        if self._constructions is None:
            found: dict[ClassId, list[tuple[CallSite, FunctionId]]] = {}
            for key, entry in self.entries.items():
                for qualname, function in entry.summary.functions.items():
                    for call in function.calls:
                        kind, owner, built = self.resolve_dotted(key, qualname, call.target)
                        if kind == "class" and owner is not None and built is not None:
                            found.setdefault((owner, built), []).append((call, (key, qualname)))
            self._constructions = found
        return self._constructions

    def _parameters_every_call_passes(
        self, field: str, ignored: Callable[[str], bool], attributes: frozenset[str] = frozenset()
    ) -> frozenset[tuple[FunctionId, str]]:
        """Parameters that every plain project call site (at least one) passes an argument
        listed in its ``field`` (``host_args``, ``number_args``), an attribute of ``self``
        among ``attributes``, or a parameter of the caller found so itself; the callee
        never rebinds them. To a fixpoint."""
        candidates = []
        owners = self.call_owners()
        for callee, sites in self.callers().items():
            sites = [
                (call, plain) for call, plain in sites
                if not ignored(owners[id(call)][0]) and not self.superseded(owners[id(call)])
            ]
            function = self.function(callee)
            if function is None or not sites or not all(plain for _call, plain in sites):
                continue
            params = function.call_params
            # A host tensor stays on the host through views and casts of itself (``labels =
            # labels.reshape(n, -1)``); a number through nothing.
            kept = function.resident_params if field == "host_args" else function.kept_params
            for position, name in enumerate(params):
                if name in kept:
                    # A constant default stands for the argument where a call leaves it out.
                    defaulted = field == "number_args" and name in function.defaults
                    candidates.append((callee, argument_places(function, position, name), name,
                                       [call for call, _plain in sites], defaulted))
        found: set[tuple[FunctionId, str]] = set()
        if field == "number_args":
            # A parameter no call the index sees passes holds its default, as the function's
            # own analysis takes it: ``forward(self, x, layer=8)`` passing ``layer`` on to
            # ``self.encoder(x, layer)`` passes a number. Not where calls it does not see
            # may pass it (:meth:`runs_unseen`, :meth:`_built_unseen`): ``block(x, t)`` over
            # an ``nn.ModuleList`` hands ``forward(self, x, t=0.0)`` a tensor.
            callers = self.callers()
            for key, entry in self.entries.items():
                for qualname, function in entry.summary.functions.items():
                    defaulted = [name for name, value in function.defaults.items()
                                 if name in function.kept_params and isinstance(value, (bool, int, float, str))]
                    # (The cheap tests first: most functions have no such default, and asking
                    # whether a ``forward``'s instances are all followed walks the project.)
                    if not defaulted or callers.get(fid := (key, qualname)) or self.runs_unseen(fid):
                        continue
                    if function.cls is not None and function.name in ("forward", "__call__") and self._built_unseen(
                            (key, qualname.rpartition(".")[0])):
                        continue
                    found.update((fid, name) for name in defaulted)
        # A candidate's answer changes only when a parameter of a function holding one of its
        # calls is found (the call may forward it): each is asked once, and again only then.
        waiting: dict[FunctionId, list[int]] = {}
        for number, (_callee, _wheres, _name, sites, _defaulted) in enumerate(candidates):
            for owner in {owners[id(call)] for call in sites if call.forwarded}:
                waiting.setdefault(owner, []).append(number)
        pending = deque(range(len(candidates)))
        queued = set(pending)
        while pending:
            number = pending.popleft()
            queued.discard(number)
            callee, wheres, name, sites, defaulted = candidates[number]
            if (callee, name) in found:
                continue
            if all(self._passes(getattr(call, field), call, owners[id(call)], wheres, found)
                   or any(where in wheres and name in attributes for where, name in call.attribute_args)
                   or (defaulted and _leaves_out(call, wheres)) for call in sites):
                found.add((callee, name))
                for again in waiting.get(callee, ()):
                    if again not in queued:
                        pending.append(again)
                        queued.add(again)
        return frozenset(found)

    def unresolved_calls(self) -> UnresolvedCalls:
        """The names the project calls where the index resolves no function: a project
        function of such a name may run from a call the index does not see."""
        if self._unresolved_calls is None:
            resolved = {id(call) for calls in self.resolved_calls().values() for call, _callee in calls}
            names: set[str] = set()
            attributes = set().union(*(entry.summary.unspelled_calls for entry in self.entries.values()))
            for entry in self.entries.values():
                for function in entry.summary.functions.values():
                    for call in function.calls:
                        if id(call) not in resolved:
                            _head, dot, last = call.target.rpartition(".")
                            (attributes if dot else names).add(last)
            self._unresolved_calls = UnresolvedCalls(frozenset(names), frozenset(attributes))
        return self._unresolved_calls

    def constant_attributes(self, ignored: Callable[[str], bool] = lambda key: False) -> dict[str, frozenset[object]]:
        """Attribute names that only ever hold the constants an ``__init__`` stores in them,
        with those constants (see :mod:`synclint.project.constant_attributes`); none when
        program code (a file not ``ignored``: not a test) may store one by a computed name."""
        if self._constant_attributes is None:
            summaries = [entry.summary for entry in self.entries.values()]
            if any(summary.stores_by_computed_name for key, summary in zip(self.entries, summaries) if not ignored(key)):
                self._constant_attributes = {}
            else:
                names = {function.name for summary in summaries for function in summary.functions.values()}
                self._constant_attributes = constant_attributes(
                    ((key, summary.attribute_stores) for key, summary in zip(self.entries, summaries)), names)
        return self._constant_attributes

    def passed_as_values(self) -> frozenset[str]:
        """Names any file passes as a value, to be called elsewhere (``checkpoint(self._inner, x)``):
        a function of such a name may run with arguments no call in the project shows."""
        if self._passed_as_values is None:
            self._passed_as_values = frozenset().union(*(entry.summary.passed_as_values for entry in self.entries.values()))
        return self._passed_as_values

    def call_owners(self) -> dict[int, FunctionId]:
        """The function each resolved call site sits in, by the call site's identity."""
        if self._owners is not None:
            return self._owners
        self._owners = {id(call): owner for owner, calls in self.resolved_calls().items() for call, _callee in calls}
        return self._owners

    @staticmethod
    def _passes(listed: tuple[int | str, ...], call: CallSite, owner: FunctionId, wheres: tuple[int | str, ...], found) -> bool:
        """The call's argument for the parameter (passed at one of ``wheres``: its position,
        its name) is among ``listed``, or forwards a parameter of the caller that is in ``found``."""
        for where in wheres:
            if where in listed:
                return True
            for forwarded_where, param in call.forwarded:
                if forwarded_where == where and (owner, param) in found:
                    return True
        return False
