"""Methods of a class built only as a base, which every subclass replaces: they never run.

simple-HRNet's ``training/Train.py`` defines ``Train``, whose ``_train`` loops over the
training loader; ``COCOTrain(Train)`` replaces ``_train``, and the scripts build only
``COCOTrain``. ``Train.run``'s ``self._train()`` runs ``COCOTrain._train`` on every
instance there is, and the base's loop, a root of the hot call graph by itself
(:mod:`synclint.project.hotness`), runs on none. decision-transformer's
``Trainer.train_step`` (replaced by ``SequenceTrainer`` and ``ActTrainer``) is the same.

A method ``C.m`` is *replaced everywhere* when all of these hold:

* **The project is nobody's library, with a script**, as for classes nothing names
  (:mod:`synclint.project.unnamed_classes`): in a package users install, they may
  subclass ``C`` and keep ``m`` (HALOs' README tells its users to subclass
  ``UnpairedPreferenceTrainer``: a page that names the class keeps it, below).
* **``C`` is built only as a base**: a top-level class with no decorator (a registry may
  build it), whose name no text of the project spells outside its own definition but in
  the base lists of its project subclasses' headers, imports that pass it on and
  ``__all__`` (:func:`~synclint.project.unnamed_classes.unnamed_in_python`'s rules: not a
  comment or a docstring; no configuration file, script, notebook or page; no
  reflection that could build a class by a computed name). ``Train.__init__(self)``,
  ``isinstance(x, Train)`` or a registry's ``{"base": Train}`` spell it: it may be built.
  Its own body spells it only as ``super(C, self)``: ``functools.partial(C.m, self)`` or
  ``__class__.m`` there may run ``m`` where the resolved calls show nothing.
* **Every project subclass replaces ``m``**: no subclass, however deep, inherits
  ``C.m`` (one that keeps it runs it), and no call but ``self.m(...)`` reaches it (an
  override's ``super().m()``, ``C.m(self)``: it runs where that call does); no text of the
  project spells ``super(...).m`` uncalled or in a mixin, ``getattr(super(), ...)``,
  ``__bases__`` or ``__mro__``, which reach it where the resolved calls show nothing.
* **``m`` is a step on its own**: a root (a loss, ``forward``) or a loop over batches,
  whose code the index would take for a step whether or not anything calls it; and no
  dunder (Python calls those by their own names).

Such a method's code is cold ("never runs: `Train` is built only as a base of classes
that each replace `_train`"). A call ``self.m(...)`` reaches the subclasses' methods
only (:func:`synclint.project.hotness.compute_contexts` drops its edge to ``C.m``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping

from synclint.project.index import ClassId, ProjectIndex
from synclint.project.mentions import python_text_of
from synclint.project.unnamed_classes import (
    is_a_program_nobody_installs,
    spelled_outside_python,
    unnamed_in_python,
)

#: The start of the why of a method a class built only as a base holds, which every
#: subclass replaces (see :func:`replaced`).
REPLACED = "never runs: "
#: ``super().m`` (``super(Sub, self).m``) anywhere, called or not: in a mixin ahead of the base
#: in a subclass's MRO, or bound to a name, it runs the base's ``m`` where the resolver sees no call.
_SUPER_ATTRIBUTE = re.compile(r"\bsuper\s*\((?:[^()]|\([^()]*\))*\)\s*\.\s*(\w+)")
#: A base's method reached by reflection on the MRO: ``getattr(super(), name)``,
#: ``type(self).__bases__[0].m(self)``, ``__mro__``, ``.mro()``: any may run.
_BY_THE_MRO = re.compile(r"\bgetattr\s*\(\s*super\s*\(|\b__bases__\b|\b__base__\b|\b__mro__\b|\.\s*mro\s*\(")


def replaced_methods(
    index: ProjectIndex, decided: Callable[[str], bool], unnamed: Mapping[ClassId, str | None]
) -> dict[ClassId, str]:
    """(file key, ``Class.method``) of each method that a class built only as a base holds
    and that every project subclass replaces, with why (see the module's docstring).
    ``decided``: whether a file's context is decided as a whole; ``unnamed``: classes (and
    methods) already found never built or never named."""
    if not is_a_program_nobody_installs(index, decided):
        return {}
    trees = _Trees()  # (each file parsed once: a candidate's own, and its subclasses')
    candidates = _candidates(index, decided, unnamed, trees)
    if candidates:
        candidates = _not_reached_past_the_resolver(index, candidates)
    if not candidates:
        return {}
    # The subclasses' headers name their bases; nothing else of theirs is blanked.
    headers: dict[str, list[tuple[int, int]]] = {}
    for cid in candidates:
        for sub in index.subclasses(cid):
            headers.setdefault(sub[0], []).append(_header(index, sub, trees.of(sub[0])))
    left, unread, _passed_on, _tested = unnamed_in_python(index, set(candidates), decided, {}, {}, headers)
    if left:
        spelled = spelled_outside_python(index, unread, {name for _key, name in left})
        left = {cid for cid in left if cid[1] not in spelled}
    return {(key, f"{name}.{method}"): replaced(name, method)
            for key, name in sorted(left) for method in candidates[(key, name)]}


def replaced(class_name: str, method: str) -> str:
    """Why a method of a class built only as a base, which every subclass replaces, never runs."""
    return f"{REPLACED}`{class_name}` is built only as a base of classes that each replace `{method}`"


def _candidates(
    index: ProjectIndex, decided: Callable[[str], bool], unnamed: Mapping[ClassId, str | None], trees: _Trees
) -> dict[ClassId, list[str]]:
    """Undecorated top-level classes with project subclasses, each with its methods that
    are steps on their own (a root, a loop over batches) and that no subclass inherits."""
    found: dict[ClassId, list[str]] = {}
    callers = index.callers()
    for key, entry in index.entries.items():
        if decided(key):
            continue
        summary = entry.summary
        for name, klass in summary.classes.items():
            cid = (key, name)
            if "." in name or klass.decorated or cid in unnamed:
                continue
            subclasses = index.subclasses(cid)
            if not subclasses:
                continue
            methods = []
            for method in klass.methods:
                function = summary.functions.get(f"{name}.{method}")
                if (
                    function is None or method.startswith("__")
                    or not (function.root is not None or any(region.kind == "hot" for region in function.regions))
                ):
                    continue
                fid = (key, f"{name}.{method}")
                # (``super()._train()`` in an override, ``Train._train(self)``: it runs after all)
                if all(index.method(sub[0], sub[1], method) != fid for sub in subclasses) and all(
                        call.target.startswith("self.") for call, _plain in callers.get(fid, ())):
                    methods.append(method)
            if methods and not _names_itself(trees.of(key), name):
                found[cid] = methods
    return found


def _names_itself(tree: ast.Module | None, name: str) -> bool:
    """Whether top-level class ``name``'s own body spells it (``functools.partial(Train._train,
    self)``, ``getattr(Train, "_train")``) or its ``__class__`` cell: a reference, not a call,
    that may run the base's method where the resolved calls show nothing. A file that cannot
    be parsed (``tree`` None) may."""
    if tree is None:
        return True
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            inside = [inner for statement in node.body for inner in ast.walk(statement)]
            # (``super(Train, self).__init__()`` runs the base's parents' methods, not its own)
            supers = {id(inner.args[0]) for inner in inside if isinstance(inner, ast.Call) and inner.args
                      and isinstance(inner.func, ast.Name) and inner.func.id == "super"}
            return any(isinstance(inner, ast.Name) and inner.id in (name, "__class__") and id(inner) not in supers
                       for inner in inside)
    return True


def _not_reached_past_the_resolver(index: ProjectIndex, candidates: dict[ClassId, list[str]]) -> dict[ClassId, list[str]]:
    """``candidates`` less the methods some file may run by ``super()`` or the MRO where the
    resolved calls show nothing (see :data:`_SUPER_ATTRIBUTE`, :data:`_BY_THE_MRO`); a file
    that cannot be read may."""
    reached: set[str] = set()
    for key in index.entries:
        text = python_text_of(key)
        if text is None or _BY_THE_MRO.search(text):
            return {}
        if "super" in text:
            reached.update(match.group(1) for match in _SUPER_ATTRIBUTE.finditer(text))
    left = {cid: [method for method in methods if method not in reached] for cid, methods in candidates.items()}
    return {cid: methods for cid, methods in left.items() if methods}


class _Trees:
    """The project files' trees, each parsed when first asked for (None: it does not parse)."""

    def __init__(self) -> None:
        self._trees: dict[str, ast.Module | None] = {}

    def of(self, key: str) -> ast.Module | None:
        if key not in self._trees:
            try:
                self._trees[key] = ast.parse(python_text_of(key) or "")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[key] = None
        return self._trees[key]


def _header(index: ProjectIndex, cid: ClassId, tree: ast.Module | None) -> tuple[int, int]:
    """(first, last line) of a class's header in its file's ``tree`` (``class
    COCOTrain(Train):``, over several lines when its bases are), up to the line before its
    body: none at all when the body shares a line with the header (``class
    Small(COCOTrain): pass``), whose lines may go on with any code (``Train(...).run()`` on
    the next one)."""
    klass = index.klass(cid)
    first = klass.line if klass is not None else 0
    nothing = (first, first - 1)
    if tree is None:
        return nothing
    name = cid[1].rsplit(".", 1)[-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name and first in (
                node.lineno, *(decorator.lineno for decorator in node.decorator_list)):
            header_end = max([node.lineno, *(part.end_lineno or part.lineno for part in [*node.bases, *node.keywords])])
            body = min([node.body[0].lineno, *(d.lineno for d in getattr(node.body[0], "decorator_list", ()))])
            if body <= header_end:
                return nothing
            return node.lineno, body - 1  # (a decorator of the body's first method is no header: it may build)
    return nothing
