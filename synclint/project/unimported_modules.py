"""Modules that no file of the project imports and that are no script: they never run.

A module runs when something imports it or runs it. yolov9 keeps ``utils/segment/loss.py``
and ``utils/panoptic/loss.py``, copies of the anchor-based ``ComputeLoss``, beside the
``loss_tal.py`` modules its training scripts import: nothing imports the copies, nothing
runs them, and their losses (roots of the hot call graph by their names) never run. Where
their ``ComputeLoss`` is named in other files in ways the text cannot tie to one copy (as a
module's attribute, in a string), :mod:`synclint.project.unnamed_classes` cannot tell.

A module (a file of the project index) is *unimported* when all of these hold:

* **No file imports it.** No import statement of a Python file of the project (anywhere
  in it: a function, a ``try`` block, a class body) names it. ``import a.b.c`` and ``from
  a.b.c import x`` name ``a``, ``a.b`` and ``a.b.c`` (importing a module runs its
  packages' ``__init__.py`` first); ``from a.b import c`` names ``a.b.c`` too, and ``from
  a.b import *`` every module of ``a.b``; relative imports are resolved against the
  importing file's package. An absolute name counts when it is the module's dotted name
  or a tail of it (``import loss`` from a script beside ``loss.py``, ``from models.yolo
  import Model`` after a ``sys.path`` insertion: either may find the file, so both count),
  and when it ends with the module's dotted name (SlowFast's ``from
  vision.fair.slowfast.tools.train_net import train``: the project vendored under a
  longer package path). Not a tail that is another project module's whole dotted name:
  CCNet's ``from loss.criterion import ...`` names its top-level package ``loss/``, which
  Python finds first, not ``utils/loss.py``; unless the tail's directory may be on
  ``sys.path``: the importer sits in it (a script beside ``utils/loss.py``), or the
  project changes the path (a Python file, a test's too, spells ``sys.path`` or
  ``addsitedir``; a script, configuration file or page ``PYTHONPATH``, or pytest's
  ``pythonpath``). A Python file the index could not read (Python 2) is searched
  as text for every tail. An import only from modules that never run counts for nothing:
  those modules are found together (no chain of imports reaches them from a file that
  may run, *transitively*: what only dead code imports is dead too).
* **It is no script** (:mod:`synclint.project.scripts`): no ``if __name__ ==
  "__main__":``, no top-level statement that does work. Nor is it a file that a tool runs
  by its name: ``__init__.py``, ``__main__.py``, ``setup.py``, ``conftest.py``,
  ``hubconf.py`` (``torch.hub``), ``noxfile.py``, ``sitecustomize.py``.
* **It registers nothing** (:func:`~synclint.project.scripts.registers_itself`): a
  class under ``@BACKBONES.register_module()`` is built by a name in a config once
  something imports its module, maybe from outside the project (ConvNeXt's
  ``semantic_segmentation/backbone/convnext.py``, copied into mmsegmentation).
* **No text spells it.** No Python file of the project (its own included, in its strings and comments: a docstring's
  ``python utils/tool.py``) nor configuration file, shell script, notebook or
  documentation page (:data:`~synclint.project.layout.NAMING_SUFFIXES`) spells its dotted
  name or its path, or a tail of either of two parts or more (``segment.loss``,
  ``segment/loss``), as a word: not ``segment.loss_tal``. ``python -m pkg.tool``,
  ``import_module("pkg.tool")``, an entry point in ``pyproject.toml`` and Hydra's
  ``_target_: pkg.tool.Loss`` all spell it. A module at the project's top (one part:
  ``tool``) is spelled by that word. Import statements do not count (they are resolved:
  ``from pkg.tool import x`` in a module that never runs runs nothing). A module a text
  spells may run, and so may what it imports.
* **Its context is not decided otherwise**: test, benchmark and export code keep their
  own reasons (and import what they test, which then runs).

and the project allows the question at all, as for unnamed classes:

* **It is no library's module.** In a project that can be installed (``setup.py``, a
  ``setup.cfg`` that describes a distribution, a ``pyproject.toml`` with a ``[project]`` or build table: see
  :func:`~synclint.project.layout.is_installable`), a module of a package (a directory
  with an ``__init__.py``, or a directory below one: pytorchvideo's
  ``pytorchvideo/neural_engine/``, a namespace package) is the library's: its users
  import it, and the project may not (a package's ``train.py`` that users call). Its
  loose scripts and tools are still asked.
* **It has a program**: some Python file of it (tests aside) is a script. A project
  of modules only (``attention.py`` and ``bias.py`` in a repository) is a library that
  its users import, or copy.
* **Its steps were found** (see :func:`synclint.project.facts.facts_for_project`): a
  library's users import its modules, which the library itself may import nowhere. A
  piece of a project too big to index at once does not see what the other pieces import.
* **No file of the program (tests, benchmarks and export tools aside; another
  framework's ``main.py`` counts) could import a module by a computed name or run a
  file by its path**, as its text spells it
  (:func:`~synclint.project.reflection.find_module_loading_in_packages`): ``import_module`` or
  ``__import__`` of anything but a string (but one that begins with a literal package,
  mt-dnn's ``import_module("tasks." + file_name)``, may import only that package's
  modules: the others are still asked; so may a literal name given more arguments,
  ``__import__("tasks", fromlist=[name])``; ``"proj.tasks." + name`` is of the
  project's ``tasks`` too, and ``"proj." + name``, with ``proj`` the project's directory,
  of any package), ``pkgutil.iter_modules``/``walk_packages``,
  ``runpy``, ``spec_from_file_location``, ``SourceFileLoader``, ``exec(open(...))``
  (fairseq imports every model module of its ``models/`` folder that way), or a loader of
  configuration files written in Python, which runs the file a command line names
  (``config_flags.DEFINE_config_file``, ``Config.fromfile``, ``LazyConfig``: score_sde's
  ``configs/``; gin's ``parse_config_file``, whose files import modules), or a lookup of an object by a computed dotted path, which imports the
  module the path names (``pydoc.locate(f"models.{arch}.Net")``, Hydra's ``get_class``
  and a ``_target_`` that is no literal, ``importlib.util.find_spec``). Not the module part
  of a dotted path split in two (latent-diffusion's ``get_obj_from_str``: ``module, cls =
  path.rsplit(".", 1)``, ``getattr(import_module(module), cls)``): the path is spelled
  where it is written (a config's ``target: ldm.models.autoencoder.VQModel``), which the
  text search sees, or built by a template that begins with a package (``"models." +
  arch``, in any file), whose modules may then load.

The code of an unimported module is cold: it never runs, and so is what only it calls.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NamedTuple

from synclint.project.cold_reasons import never_imported, outside_the_program
from synclint.project.index import ProjectIndex
from synclint.project.layout import dotted_tails, is_installable, natural_root
from synclint.project.mentions import blanked, python_text_of, spelled_in, spelled_names, strings_and_comments
from synclint.project.reflection import SplitPathTemplates, find_module_loading_in_packages

#: Files that a tool runs or imports by their name, never by an import statement.
_RUN_BY_NAME = frozenset({"__init__.py", "__main__.py", "setup.py", "conftest.py", "hubconf.py", "noxfile.py",
                          "sitecustomize.py", "usercustomize.py"})


def unimported_modules(index: ProjectIndex, decided: Callable[[str], str | None]) -> dict[str, str]:
    """The modules (file key -> why) of ``index`` that never run: no file imports them
    (but modules that never run), they are no scripts and no text spells them; none when
    a file of the program could import a module by a computed name. ``decided``: why a
    file's context is already decided, or None (such a file is never unimported, and its
    imports count; its reflection too, unless it lies outside the program: a test).

    The project's files are read only when there is a candidate that no import reaches
    (few projects have one), and once: what they spell is searched for all of those."""
    tails = _candidate_tails(index, decided)
    if not tails or not any(entry.summary.is_script and decided(key) is None for key, entry in index.entries.items()):
        return {}  # (nothing to ask, or a project of modules only: a library its users import)
    imports, unread, through_shadows = _imports(index, tails)
    spelled = spelled_in(sorted(unread), {tail for names in tails.values() for tail in names}) if unread else set()
    live = {key for key, names in tails.items() if names & spelled}
    dead = _unreached(index, imports, tails.keys(), live)
    if not dead:
        return {}
    forms = {form for key in dead for form in _spellings(tails[key])}
    loaded: set[str] = set()
    own = {key: _spellings(tails[key]) & forms for key in dead}
    path_changes: list[bool] = []
    spelled = _spelled_in_python(index, decided, forms, unread, loaded, own, path_changes)
    if spelled is None:
        return {}
    spelled |= spelled_in(index.naming_files, forms - spelled)
    if through_shadows and (path_changes or _changes_the_path(index.naming_files)):
        for key, shadowed in through_shadows.items():  # (the tails may resolve where the project puts them)
            imports.setdefault(key, set()).update(shadowed)
        dead = _unreached(index, imports, tails.keys(), live)
    if loaded & {index.root.name, natural_root(index.root).name}:
        return {}  # (``"proj." + name``, run from above the project's directory ``proj``: any of its modules)
    while revived := {key for key in dead if not spelled.isdisjoint(_spellings(tails[key]))
                      or _in_packages(tails[key], loaded)}:
        live |= revived  # a module some text spells may run, and so may what it imports
        dead = _unreached(index, imports, tails.keys(), live)
    return {key: never_imported(_path(index, key), _dead_importer(index, key, imports, dead)) for key in sorted(dead)}


def _spelled_in_python(index: ProjectIndex, decided: Callable[[str], str | None], forms: set[str],
                       unread: set[str], loaded: set[str], own: dict[str, set[str]],
                       path_changes: list[bool] | None = None) -> set[str] | None:
    """Those of ``forms`` that the project's Python files spell outside their import
    statements (resolved already: ``from pkg.losses import x`` in a module that never runs
    must not make ``pkg.losses`` run); None when a file of the program could import any
    module by a computed name. The packages whose modules a file of the program may import
    by a computed name that begins with the package (mt-dnn's
    ``importlib.import_module("tasks." + file_name)``) go to ``loaded``.

    A module's own file spells it only in its strings and comments (a docstring's ``python
    pkg/tool.py``), not in its code: TinyLlama's ``lit_gpt/adapter_v2.py`` names itself in
    ``getattr(lit_gpt.adapter_v2, self._mlp_class)``, which runs only once it does
    (``own``: file key -> the forms that spell its module)."""
    spelled: set[str] = set()
    split_paths = SplitPathTemplates()  # (``get_obj_from_str(path)``: the modules its templates may load)
    for key, entry in index.entries.items():
        if key in unread:
            continue
        text = python_text_of(key)
        if text is None:
            return None  # (unreadable since it was summarised: it may import any of them)
        in_program = not _outside_the_program(decided(key))
        split_paths.read(text, in_program)
        if path_changes is not None and not path_changes and _PATH_CHANGE.search(text):
            # (``sys.path`` changed: see :func:`_shadowed_tail`; by a test or its
            # ``conftest.py`` too, whose imports count as well)
            path_changes.append(True)
        if in_program:
            marker, packages = find_module_loading_in_packages(text)
            if marker is not None:
                return None
            loaded |= packages
        itself = own.get(key, set())
        if forms - spelled - itself:
            spelled |= spelled_names(blanked(text, entry.summary.import_lines), forms - spelled - itself, {})[0]
        if itself - spelled:
            spelled |= spelled_names(strings_and_comments(text), itself - spelled, {})[0]
    loaded |= split_paths.packages
    return spelled


def _changes_the_path(paths: Iterable[str]) -> bool:
    """A script, configuration file or page sets ``PYTHONPATH`` (or a notebook changes
    ``sys.path``)."""
    for path in paths:
        try:
            with open(path, "rb") as handle:
                if _PATH_CHANGE.search(handle.read(16 << 20).decode("utf-8", "replace")):
                    return True
        except OSError:
            return True
    return False


def _in_packages(tails: Iterable[str], packages: set[str]) -> bool:
    """A module of one of ``packages`` (or one of them), by any of its dotted names' tails
    and any tail of the package's name: ``"proj.pkg." + name``, run from above the
    project's directory, is a module of its ``pkg`` (as an import statement's longer
    package path is: see :class:`_Lookup`). (A package named as the project's directory,
    ``"proj." + name``, holds every module: the caller asks no module then.)"""
    wholes = {suffix for package in packages for suffix in dotted_tails(package)}
    return any(tail == package or tail.startswith(package + ".") for tail in tails for package in wholes)


def _outside_the_program(why: str | None) -> bool:
    """A test's or an export tool's reflection imports what runs there, not in the program's
    steps (a file of another framework's code is still the program's: its ``main.py``)."""
    return why is not None and outside_the_program(why)


def _candidate_tails(index: ProjectIndex, decided: Callable[[str], str | None]) -> dict[str, frozenset[str]]:
    """The modules that could be unimported (no script, no file run by its name, no
    decided context, no module of an installable project's package), each with its
    dotted names and their tails (``a.b.c``: ``c``, ``b.c``, ``a.b.c``)."""
    library = _library_directories(index)
    candidates = {
        key for key, entry in index.entries.items()
        if not entry.summary.is_script and not entry.summary.registers_itself and "<module>" in entry.summary.functions
        and os.path.basename(key) not in _RUN_BY_NAME and decided(key) is None
        and not any(directory in library for directory in Path(key).parents)
    }
    tails: dict[str, set[str]] = {key: set() for key in candidates}
    for name, key in index.modules.items():
        if key in tails:
            tails[key].update(dotted_tails(name))
    return {key: frozenset(names) for key, names in tails.items()}


def _library_directories(index: ProjectIndex) -> set[Path]:
    """The directories whose modules an installable project's users may import: its
    packages (and what lies below one, namespace packages included); none when the
    project cannot be installed."""
    if not is_installable(natural_root(index.root)):
        return set()
    return {Path(key).parent for key in index.entries if os.path.basename(key) == "__init__.py"}


class _Lookup(NamedTuple):
    """The candidates by the names an import may give them."""

    #: A tail of a dotted name -> the candidates it ends (``import loss`` beside ``loss.py``).
    by_tail: dict[str, set[str]]
    #: A whole dotted name -> its module (``from vision.fair.slowfast.tools.train_net import
    #: train``: the project vendored under a longer package path names ``tools.train_net``).
    by_name: dict[str, str]
    #: A package's dotted name (or a tail) -> the candidates directly in it (``from a.b import *``).
    packages: dict[str, set[str]]

    def named(self, module: str, names: tuple[str, ...],
              shadowed: Callable[[str, str], bool] = lambda name, key: False) -> tuple[set[str], set[str]]:
        """The candidates an import statement of ``names`` from ``module`` names (see the
        module's docstring), and those of them it names only through a tail that
        ``shadowed(name, candidate)`` says another module's whole name takes."""
        parts = module.split(".") if module else []
        dotted = {".".join(parts[:cut]) for cut in range(1, len(parts) + 1)}
        dotted.update(f"{module}.{name}" if module else name for name in names if name != "*")
        found: set[str] = set()
        only_shadowed: set[str] = set()
        for name in dotted:
            for key in self.by_tail.get(name, ()):
                (only_shadowed if shadowed(name, key) else found).add(key)
        found.update(self.by_name[suffix] for name in dotted for suffix in dotted_tails(name) if suffix in self.by_name)
        if "*" in names:
            found.update(key for suffix in dotted_tails(module) for key in self.packages.get(suffix, ()))
        return found, only_shadowed - found


def _imports(index: ProjectIndex, tails: dict[str, frozenset[str]]
             ) -> tuple[dict[str, set[str]], set[str], dict[str, set[str]]]:
    """File -> the candidates its import statements name; the Python files the index could
    not read (searched as text: they may import any); and file -> the candidates its
    imports name only through a shadowed tail (:func:`_shadowed_tail`), which count only
    where the project changes ``sys.path``."""
    lookup = _Lookup({}, {name: key for name, key in index.modules.items() if key in tails}, {})
    for key, names in tails.items():
        for tail in names:
            lookup.by_tail.setdefault(tail, set()).add(key)
            if "." in tail:
                lookup.packages.setdefault(tail.rpartition(".")[0], set()).add(key)
    imports: dict[str, set[str]] = {}
    through_shadows: dict[str, set[str]] = {}
    unread = set()
    for key, entry in index.entries.items():
        if "<module>" not in entry.summary.functions:
            unread.add(key)
            continue

        def shadowed(name: str, candidate: str, importer: str = key) -> bool:
            return _shadowed_tail(index, importer, name, candidate)

        for level, module, names in entry.summary.module_imports:
            named, only_shadowed = lookup.named(index.absolute_module(key, level, module), names, shadowed)
            named.discard(key)
            only_shadowed.discard(key)
            if named:
                imports.setdefault(key, set()).update(named)
            if only_shadowed:
                through_shadows.setdefault(key, set()).update(only_shadowed)
    return imports, unread, through_shadows


def _shadowed_tail(index: ProjectIndex, importer: str, name: str, candidate: str) -> bool:
    """``import loss`` names CCNet's top-level package ``loss/``, whose whole dotted name it
    is, not ``utils/loss.py``, whose tail it only is: Python finds the package first, from
    the project's directory, unless the directory the tail resolves in (``utils/``) is on
    ``sys.path``: the importer's own (a script beside ``utils/loss.py``), or one the project
    inserts (see :func:`unimported_modules`)."""
    whole = index.modules.get(name)
    if whole is None or whole == candidate:
        return False
    depth = name.count(".") + 1
    if os.path.basename(candidate) == "__init__.py":
        depth += 1
    resolves_in = Path(candidate).parents[depth - 1]
    return Path(importer).parent != resolves_in


#: Text that puts a directory on ``sys.path`` for the program: ``sys.path.insert(0, "utils")``,
#: ``PYTHONPATH=utils python train.py``, ``site.addsitedir("utils")``, pytest's ``pythonpath
#: = utils`` (its option is spelled in lower case).
_PATH_CHANGE = re.compile(r"\bsys\.path\b|\b(?i:pythonpath)\b|\baddsitedir\b")


def _unreached(index: ProjectIndex, imports: dict[str, set[str]], candidates: Iterable[str],
               live: set[str]) -> set[str]:
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
