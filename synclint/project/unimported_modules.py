"""Modules that no file of the project imports and that are no script: they never run.

A module runs when something imports it or runs it. yolov9 keeps ``utils/segment/loss.py``
and ``utils/panoptic/loss.py``, copies of the anchor-based ``ComputeLoss``, beside the
``loss_tal.py`` modules its training scripts import: nothing imports the copies, nothing
runs them, and their losses (roots of the hot call graph by their names) never run. Their
``ComputeLoss`` is named in other files (other modules define a class of that name), so
:mod:`synclint.project.unnamed_classes` cannot tell.

A module (a file of the project index) is *unimported* when all of these hold:

* **No file imports it.** No import statement of a Python file of the project (anywhere
  in it: a function, a ``try`` block, a class body) names it. ``import a.b.c`` and ``from
  a.b.c import x`` name ``a``, ``a.b`` and ``a.b.c`` (importing a module runs its
  packages' ``__init__.py`` first); ``from a.b import c`` names ``a.b.c`` too, and ``from
  a.b import *`` every module of ``a.b``; relative imports are resolved against the
  importing file's package. An absolute name counts when it is the module's dotted name
  or a tail of it (``import loss`` from a script beside ``loss.py``, ``from models.yolo
  import Model`` after a ``sys.path`` insertion: either may find the file, so both count).
  A Python file the index could not read (Python 2) is searched as text for every tail.
  An import only from modules that never run counts for nothing: those modules are
  found together (a module reached from no other file through imports, *transitively*:
  what only dead code imports is dead too).
* **It is no script** (:mod:`synclint.project.scripts`): no ``if __name__ ==
  "__main__":``, no top-level statement that does work. Nor is it a file that a tool runs
  by its name: ``__init__.py``, ``__main__.py``, ``setup.py``, ``conftest.py``,
  ``hubconf.py`` (``torch.hub``), ``noxfile.py``, ``sitecustomize.py``.
* **No text spells it.** No Python file of the project (its own included: a docstring's
  ``python utils/tool.py``) nor configuration file, shell script, notebook or
  documentation page (:data:`~synclint.project.layout.NAMING_SUFFIXES`) spells its dotted
  name or its path, or a tail of either of two parts or more (``segment.loss``,
  ``segment/loss``), as a word: not ``segment.loss_tal``. ``python -m pkg.tool``,
  ``import_module("pkg.tool")``, an entry point in ``pyproject.toml`` and Hydra's
  ``_target_: pkg.tool.Loss`` all spell it. A module at the project's top (one part:
  ``tool``) is spelled by that word.
* **Its context is not decided otherwise**: test, benchmark and export code keep their
  own reasons (and import what they test, which then runs).

and the project allows the question at all, as for unnamed classes:

* **It is no library's module.** In a project that can be installed (``setup.py``,
  ``setup.cfg``, a ``pyproject.toml`` with a ``[project]`` or build table: see
  :func:`~synclint.project.layout.is_installable`), a module of a package (a directory
  with an ``__init__.py``) is the library's: its users import it, and the project may not
  (a package's ``train.py`` that users call). Its loose scripts and tools are still asked.
* **Its steps were found** (see :func:`synclint.project.facts.facts_for_project`): a
  library's users import its modules, which the library itself may import nowhere. A
  piece of a project too big to index at once does not see what the other pieces import.
* **No file of the program (tests, benchmarks and export tools aside) could import a
  module by a computed name or run a file by its path**, as its text spells it
  (:func:`~synclint.project.mentions.find_module_loading`): ``import_module`` or
  ``__import__`` of anything but a string, ``pkgutil.iter_modules``/``walk_packages``,
  ``runpy``, ``spec_from_file_location``, ``SourceFileLoader``, ``exec(open(...))``
  (fairseq imports every model module of its ``models/`` folder that way).

The code of an unimported module is cold: it never runs, and so is what only it calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from synclint.project.cold_reasons import never_imported
from synclint.project.index import ProjectIndex
from synclint.project.layout import is_installable, natural_root
from synclint.project.mentions import find_module_loading, spelled_names
from synclint.project.unnamed_classes import blanked, python_text_of, spelled_in

#: Files that a tool runs or imports by their name, never by an import statement.
_RUN_BY_NAME = frozenset({"__init__.py", "__main__.py", "setup.py", "conftest.py", "hubconf.py", "noxfile.py",
                          "sitecustomize.py", "usercustomize.py"})


def unimported_modules(index: ProjectIndex, decided: Callable[[str], bool]) -> dict[str, str]:
    """The modules (file key -> why) of ``index`` that never run: no file imports them
    (but modules that never run), they are no scripts and no text spells them; none when
    a file of the program could import a module by a computed name. ``decided``: whether
    a file's context is already decided (it is never unimported, and its imports count).

    The project's files are read only when there is a candidate that no import reaches
    (few projects have one), and once: what they spell is searched for all of those."""
    tails = _candidate_tails(index, decided)
    if not tails:
        return {}
    imports, unread = _imports(index, tails)
    spelled = spelled_in(unread, {tail for names in tails.values() for tail in names}) if unread else set()
    live = {key for key, names in tails.items() if names & spelled}
    dead = _unreached(index, imports, tails.keys(), live)
    if not dead:
        return {}
    forms = {form for key in dead for form in _spellings(tails[key])}
    spelled = _spelled_in_python(index, decided, forms, unread)
    if spelled is None:
        return {}
    spelled |= spelled_in(index.naming_files, forms - spelled)
    while revived := {key for key in dead if not spelled.isdisjoint(_spellings(tails[key]))}:
        live |= revived  # a module some text spells may run, and so may what it imports
        dead = _unreached(index, imports, tails.keys(), live)
    return {key: never_imported(_path(index, key), _dead_importer(index, key, imports, dead)) for key in sorted(dead)}


def _spelled_in_python(index: ProjectIndex, decided: Callable[[str], bool], forms: set[str],
                       unread: list[str]) -> set[str] | None:
    """Those of ``forms`` that the project's Python files spell outside their import
    statements (resolved already: ``from pkg.losses import x`` in a module that never runs
    must not make ``pkg.losses`` run); None when a file of the program could import a
    module by a computed name."""
    spelled: set[str] = set()
    for key, entry in index.entries.items():
        if key in unread:
            continue
        text = python_text_of(key)
        if text is None or (not decided(key) and find_module_loading(text) is not None):
            return None  # (unreadable since it was summarised: it may import any of them)
        if forms - spelled:
            spelled |= spelled_names(blanked(text, entry.summary.import_lines), forms - spelled, {})[0]
    return spelled


def _candidate_tails(index: ProjectIndex, decided: Callable[[str], bool]) -> dict[str, frozenset[str]]:
    """The modules that could be unimported (no script, no file run by its name, no
    decided context, no module of an installable project's package), each with the tails of its dotted names (``a.b.c``: ``c``, ``b.c``, ``a.b.c``)."""
    library = is_installable(natural_root(index.root))
    candidates = {
        key for key, entry in index.entries.items()
        if not entry.summary.is_script and "<module>" in entry.summary.functions
        and key.replace("\\", "/").rsplit("/", 1)[-1] not in _RUN_BY_NAME and not decided(key)
        and not (library and index.modules.get(entry.package, "").endswith("__init__.py"))
    }
    tails: dict[str, set[str]] = {key: set() for key in candidates}
    for name, key in index.modules.items():
        if key in tails:
            parts = name.split(".")
            tails[key].update(".".join(parts[cut:]) for cut in range(len(parts)))
    return {key: frozenset(names) for key, names in tails.items()}


def _imports(index: ProjectIndex, tails: dict[str, frozenset[str]]) -> tuple[dict[str, set[str]], list[str]]:
    """File -> the candidates its import statements name; and the Python files the index
    could not read (searched as text: they may import any)."""
    by_tail: dict[str, set[str]] = {}
    packages: dict[str, set[str]] = {}  # ``a.b`` -> the candidates ``a.b.c`` (``from a.b import *``)
    for key, names in tails.items():
        for tail in names:
            by_tail.setdefault(tail, set()).add(key)
            if "." in tail:
                packages.setdefault(tail.rpartition(".")[0], set()).add(key)
    imports: dict[str, set[str]] = {}
    unread = []
    for key, entry in index.entries.items():
        if "<module>" not in entry.summary.functions:
            unread.append(key)
            continue
        for level, module, names in entry.summary.module_imports:
            named = _named_modules(index.absolute_module(key, level, module), names, by_tail, packages) - {key}
            if named:
                imports.setdefault(key, set()).update(named)
    return imports, unread


def _named_modules(module: str, names: tuple[str, ...], by_tail: dict[str, set[str]],
                   packages: dict[str, set[str]]) -> set[str]:
    """The candidates one import statement names (see the module's docstring)."""
    parts = module.split(".") if module else []
    dotted = {".".join(parts[:cut]) for cut in range(1, len(parts) + 1)}
    dotted.update(f"{module}.{name}" if module else name for name in names if name != "*")
    found = {key for name in dotted for key in by_tail.get(name, ())}
    if "*" in names:
        found.update(packages.get(module, ()))
    return found


def _unreached(index: ProjectIndex, imports: dict[str, set[str]], candidates: Iterable[str], live: set[str]) -> set[str]:
    """The candidates no chain of imports reaches from a module that runs: a file that is no
    candidate, or a candidate in ``live``."""
    candidates = set(candidates)
    reached = {key for key in index.entries if key not in candidates} | live
    stack = list(reached)
    while stack:
        for imported in imports.get(stack.pop(), ()):
            if imported not in reached:
                reached.add(imported)
                stack.append(imported)
    return candidates - reached


def _dead_importer(index: ProjectIndex, key: str, imports: dict[str, set[str]], dead: set[str]) -> str | None:
    """The path of a module that never runs and imports ``key``; None when none does."""
    return next((_path(index, importer) for importer in sorted(dead) if key in imports.get(importer, ())), None)


def _path(index: ProjectIndex, key: str) -> str:
    return "/".join(index.relative_parts(key))


def _spellings(tails: Iterable[str]) -> set[str]:
    """How a text spells a module of these dotted tails: dotted or as a path, each of two
    parts or more (a module at the project's top: its one word)."""
    forms = {tail for tail in tails if "." in tail}
    forms |= {tail.replace(".", "/") for tail in forms}
    if not forms:
        forms = set(tails)
    return forms
