"""Attributes that hold what every construction of their class passes to its constructor.

GRAN's ``GNN.__init__(..., has_graph_output=False)`` stores ``self.has_graph_output =
has_graph_output``, and the project's one ``GNN(...)`` leaves the default: ``if
self.has_graph_output:`` in ``GNN.forward`` never runs, nor the uploads in its block. An
attribute stored so (:class:`~synclint.project.constant_attributes.ConstructorArgument`)
holds the constants the constructions pass, or leave to the default, when the project
shows every construction of the class:

* **Nobody installs the project.** An installed package's users build its classes with
  any arguments (see :func:`synclint.project.layout.is_installable`).
* **The class is built only where a call spells it.** A top-level class that no
  decorator registers, that the project never passes as a value (``{"gnn": GNN}``,
  ``partial(GNN, ...)``), that no project class derives from (a subclass's
  ``super().__init__(...)`` passes its own arguments), that no configuration file, script,
  notebook or document spells (a Hydra ``_target_`` builds it with the file's keys), and
  that no program file can build by a computed name (``getattr(models, cfg.arch)(**cfg)``,
  ``globals()[name]`` in its own file; see
  :func:`synclint.project.unnamed_classes.reflection_reach`), by a string naming it
  (``getattr(model, "GNN")``, ``{"_target_": "model.GNN"}``; ``__all__`` aside), or by a
  call the index does not resolve: the class or a project base building its own class
  (``cls(...)``, ``type(self)(...)``, ``self.__class__(...)``), a call spelling its name in
  a class body, a default or after ``importlib.import_module(...)``.
* **Every construction in the program's code (tests aside: a ``test_net.py`` that holds no
  test, an evaluation script, is program code) tells the value**: a
  constant, by position or keyword; nothing, where the parameter has a constant default;
  or the argument of an enclosing ``__init__`` that passes on its own parameter unchanged
  (votenet's ``PointnetSAModuleVotes(sample_uniformly=False)`` building
  ``QueryAndGroup(..., sample_uniformly=sample_uniformly)``), which takes what that class's
  constructions pass, under the same rules. ``*args``/``**kwargs`` may pass anything. At
  least one construction must be seen.

The attribute is then constant as any other (see
:mod:`synclint.project.constant_attributes`): every store of its name in the project must
be a constant or such an argument.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from synclint.project.constant_attributes import UNKNOWN_VALUE, ConstructorArgument, StoredValue, constant_attributes
from synclint.project.index import ClassId, ProjectIndex
from synclint.project.layout import is_installable, natural_root
from synclint.project.mentions import python_text_of, spelled_in
from synclint.project.reflection import builds_its_own_classes
from synclint.project.unnamed_classes import module_holds, reflection_reach

#: How many enclosing constructors an argument may be passed on through.
_MAX_FORWARDS = 3
#: A call of a name, as text (not the ``class GNN(`` or ``def f(`` that defines it).
_CALL = re.compile(r"(?<!class )(?<!def )\b([A-Za-z_]\w*)\s*\(")
#: A quoted name, dotted or not (``"GNN"``, ``'model.GNN'``, ``"model:GNN"``).
_QUOTED = re.compile(r"""["']([\w.:]+)["']""")
#: ``__all__ = [...]`` (or ``+=``, a tuple): names passed on, not built.
_ALL = re.compile(r"__all__\s*\+?=\s*[\[(][^\])]*[\])]")
#: A class header's bases (``class Big(model.GNN):``), and each dotted name among them.
_BASES = re.compile(r"\bclass\s+\w+\s*\(([^)]*)\)")
_DOTTED = re.compile(r"[A-Za-z_][\w.]*")
#: ``GNN.__init__(self, ...)``: a class's constructor called by name.
_EXPLICIT_INIT = re.compile(r"\b(\w+)\s*\.\s*__init__\s*\(")
#: A class body building its own class (or a subclass) where no call spells its name.
_SELF_CONSTRUCTION = re.compile(r"\bcls\s*\(|\btype\s*\(\s*self\s*\)\s*\(|__class__\s*\(")


def constants_with_constructor_arguments(index: ProjectIndex, ignored: Callable[[str], bool]) -> dict[str, frozenset[object]]:
    """:meth:`ProjectIndex.constant_attributes`, where a ``self.flag = flag`` store holds
    what the constructions of its class pass (see the module docstring). ``ignored``:
    files whose code is no part of the program (tests): their constructions do not count,
    nor do they make anything unknown by a computed store."""
    summaries = [(key, entry.summary) for key, entry in index.entries.items()]
    # (Only attributes some ``if self.flag:`` tests matter: no other class's constructions are read.)
    tested = {guard.param.partition(".")[2] for _key, summary in summaries for function in summary.functions.values()
              for guard in function.attribute_guards}
    arguments = [(key, value[0]) for key, summary in summaries for name, stored in summary.attribute_stores.items()
                 if name in tested for value in stored if value and isinstance(value[0], ConstructorArgument)]
    if not arguments or is_installable(natural_root(index.root)):
        return index.constant_attributes(ignored)
    # A file named like a test that holds no test (``test_net.py``, an evaluation script) is program code.
    def tests(key: str) -> bool:
        return ignored(key) and _holds_tests(index, key)

    if any(summary.stores_by_computed_name for key, summary in summaries if not tests(key)):
        return {}
    constructions = _Constructions(index, tests, {(key, argument.cls) for key, argument in arguments})
    names = {function.name for _key, summary in summaries for function in summary.functions.values()}
    return constant_attributes(((key, summary.attribute_stores) for key, summary in summaries), names,
                               constructions.values)


def _spellings(text: str | None) -> tuple[Counter[str], frozenset[str]] | None:
    """What Python ``text`` spells of classes: how many times it calls each name (``GNN(``,
    ``module.GNN(``; not ``class GNN(``), and the names its strings give (``"GNN"``,
    ``"model.GNN"``, ``"model:GNN"``: ``getattr(model, "GNN")``, ``{"_target_": "model.GNN"}``),
    outside ``__all__``, which only passes a name on, or that a class header lists among its
    bases, or whose ``__init__`` it calls (``GNN.__init__(self, ...)``). Read from the text, not parsed (every
    program file passes here): a string in a comment counts too. None for text that
    cannot be read: it may spell anything."""
    if text is None:
        return None
    strings = _QUOTED.findall(_ALL.sub("", text))
    named = {part for string in strings for part in (string, string.rpartition(".")[2], string.rpartition(":")[2])}
    # A base of a class (``class Big(GNN):``, ``class Big(model.GNN):``: a subclass the index
    # may not resolve, ``from model import *``), an explicit ``GNN.__init__(self, ...)``.
    named.update(base.rpartition(".")[2] for bases in _BASES.findall(text) for base in _DOTTED.findall(bases))
    named.update(_EXPLICIT_INIT.findall(text))
    return Counter(_CALL.findall(text)), frozenset(named)


def _holds_tests(index: ProjectIndex, key: str) -> bool:
    """Whether file ``key`` holds tests: it imports ``pytest``/``unittest``, or, run as no
    script (no ``__main__`` block: ``def test(model, loader)`` an evaluation script runs is
    no test), defines a ``test*`` function or method or a ``Test*`` class; ``conftest.py`` always."""
    summary = index.entries[key].summary
    if key.replace("\\", "/").rsplit("/", 1)[-1] == "conftest.py":
        return True
    if any(module.partition(".")[0] in ("pytest", "unittest") for _level, module, _name in summary.imports.values()):
        return True
    return not summary.is_script and (
        any(function.name.startswith("test") for function in summary.functions.values())
        or any(name.rpartition(".")[2].startswith("Test") for name in summary.classes))


class _Constructions:
    """What the program's constructions of some classes pass to their constructors."""

    def __init__(self, index: ProjectIndex, ignored: Callable[[str], bool], classes: set[ClassId]) -> None:
        self.index = index
        self.ignored = ignored
        self.sites = index.constructions()
        #: (file key, last part of the call's name) -> how many constructions the index resolves there.
        self._resolved = Counter((owner[0], call.target.rpartition(".")[2])
                                 for sites in self.sites.values() for call, owner in sites)
        self._spelled: dict[str, tuple[Counter[str], frozenset[str]] | None] = {}
        self._texts: dict[str, str | None] = {}
        self._reflection_cache: list[tuple[str, set[str], bool]] | None | bool = False
        self.asked = set(classes)
        self.seen = self._built_only_where_spelled(classes)

    def _built_only_where_spelled(self, classes: set[ClassId]) -> set[ClassId]:
        """Those of ``classes`` only a call spelling their name can build (see the module docstring)."""
        index = self.index
        passed = index.passed_as_values()
        left = set()
        for cid in classes:
            klass = index.klass(cid)
            if klass is not None and "." not in cid[1] and not klass.decorated and cid[1] not in passed \
                    and not index.subclasses(cid):
                left.add(cid)
        if left:
            spelled = spelled_in(list(index.naming_files), {name for _key, name in left})
            left = {cid for cid in left if cid[1] not in spelled and not self._built_unresolved(cid)}
        reflections = self._reflections() if left else []
        if reflections is None:
            return set()
        for key, reached, own in reflections:
            left = {(owner, name) for owner, name in left
                    if not module_holds(index, reached, owner, name) and not (own and owner == key)}
        return left

    def _text(self, key: str) -> str | None:
        """The text of Python file ``key``, read once (the spellings, the reflection and a
        class's own code all ask)."""
        if key not in self._texts:
            self._texts[key] = python_text_of(key)
        return self._texts[key]

    def _spellings(self, key: str) -> tuple[Counter[str], frozenset[str]] | None:
        """:func:`_spellings` of program file ``key``, read once."""
        if key not in self._spelled:
            self._spelled[key] = _spellings(self._text(key))
        return self._spelled[key]

    def _built_unresolved(self, cid: ClassId) -> bool:
        """Whether code the index does not read as a construction of ``cid`` may build it:
        the class or a project base builds its own class (``cls(...)`` in a classmethod,
        ``type(self)(...)``, ``self.__class__(...)``), or a program file spells a call of
        its name more often than the constructions the index resolves there (a class body's
        ``gnn = GNN(4, True)``, a default, ``importlib.import_module("model").GNN(...)``), or
        holds a string naming it (see :func:`_spellings`)."""
        for key, name in self.index.class_bases(cid):
            klass = self.index.klass((key, name))
            text = self._text(key)
            if klass is None or text is None:
                return True
            if _SELF_CONSTRUCTION.search("\n".join(text.splitlines()[klass.line - 1:klass.end_line])):
                return True
        name = cid[1]
        for key in self.index.entries:
            if self.ignored(key):
                continue
            spelled = self._spellings(key)
            if spelled is None:
                return True
            calls, named = spelled
            if calls[name] > self._resolved.get((key, name), 0) or name in named:
                return True
        return False

    def _reflections(self) -> list[tuple[str, set[str], bool]] | None:
        """Per program file: the project modules it looks members up in by a computed name,
        and whether it builds from its own namespace; None when it could build any class
        (each file read once, when some class is asked about)."""
        if self._reflection_cache is False:
            found: list[tuple[str, set[str], bool]] | None = []
            for key in self.index.entries:
                if self.ignored(key):
                    continue
                text = self._text(key)
                reached = None if text is None else reflection_reach(self.index, key, text)
                if reached is None:
                    found = None
                    break
                found.append((key, reached, builds_its_own_classes(text)))
            self._reflection_cache = found
        return self._reflection_cache

    def values(self, key: str, argument: ConstructorArgument, depth: int = 0) -> list[StoredValue]:
        """The values the constructions of ``argument``'s class (in file ``key``) pass for
        it: constants, or ``[UNKNOWN_VALUE]``."""
        cid = (key, argument.cls)
        sites = [(call, owner) for call, owner in self.sites.get(cid, ()) if not self.ignored(owner[0])]
        if cid not in self.seen or not sites:
            return [UNKNOWN_VALUE]
        found: list[StoredValue] = []
        for call, owner in sites:
            places = {argument.param} if argument.position is None else {argument.param, argument.position}
            given = [(where, value) for where, value in call.constants if where in places]
            if given:
                where, value = given[0]
                if value:
                    found.append(value)
                    continue
                forwarded = next((param for at, param in call.forwarded if at == where), None)
                passed_on = self._passed_on(owner, forwarded, depth) if forwarded is not None else None
                if passed_on is None:
                    return [UNKNOWN_VALUE]
                found += passed_on
            elif argument.default and not any(where == "*" for where, _value in call.constants):
                found.append(argument.default)
            else:
                return [UNKNOWN_VALUE]  # (``**kwargs`` may pass it; without a constant default, anything)
        return found

    def _passed_on(self, owner: tuple[str, str], param: str, depth: int) -> list[StoredValue] | None:
        """What the constructions of the class whose ``__init__`` is ``owner`` pass for its
        parameter ``param``, which it passes on; None when that is not known."""
        key, qualname = owner
        cls, _, name = qualname.rpartition(".")
        function = self.index.function(owner)
        if name != "__init__" or not cls or function is None or depth >= _MAX_FORWARDS:
            return None
        params = list(function.params)[1:]
        if param not in params:
            return None
        position = None if param in function.keyword_only else params.index(param)
        default = (function.defaults[param],) if param in function.defaults else ()
        if (key, cls) not in self.asked:
            self.asked.add((key, cls))
            self.seen |= self._built_only_where_spelled({(key, cls)})
        values = self.values(key, ConstructorArgument(cls, param, position, default), depth + 1)
        return None if UNKNOWN_VALUE in values else values
