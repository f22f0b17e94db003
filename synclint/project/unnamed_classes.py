"""Classes that nothing in the project names, whose methods therefore never run.

``forward`` methods, losses and autograd ``Function.forward`` are roots of the hot
call graph (:mod:`synclint.project.hotness`): the project may build such a class
through a registry or a config, where no call shows it. But it has to name the class
somewhere to build it. yolov7's ``utils/loss.py`` defines ``RankSort``, ``aLRPLoss``
and ``APLoss``, whose names appear nowhere else in the repository: they cannot run,
and their methods are no roots. The same holds for a top-level function that is a step
by its name (a loss: CenterNet's ``_slow_neg_loss``, which nothing calls), or that
loops over batches (Point-MAE's ``tools/runner_pretrain.py: validate``, called only in
a comment; a public one only in a project that is nobody's library: no one installs it
and some file is a script), and that its file hands to nothing (a decorator, a value
passed on): it is a *candidate* like a class that holds a root, and the conditions
below decide. The loops of such a function are no steps when it never runs.

A top-level class is *unnamed* when all of these hold:

* **No text names it.** Its name is not a word (see :mod:`synclint.project.mentions`)
  of any other Python file of the project where code or a string may refer to it (code,
  a string, ``__all__``, an import, a base of another class; not a comment, which runs
  nothing: Point-MAE's ``# metrics = validate(...)``, nor a string that is a statement
  of its own: a docstring, GraphCL's call of ``eval_loss`` put in triple quotes, nor one in a
  ``raise`` statement: an error message), nor of its own file outside its
  own definition (code in a class runs only once the class does) but as an attribute
  (``model.eval()`` calls no function ``eval`` of the file), nor of a configuration file,
  shell script, notebook or documentation page (:data:`~synclint.project.layout.NAMING_SUFFIXES`: Hydra's ``_target_:
  pkg.losses.APLoss`` builds a class by path, a run script may pass ``--loss APLoss``, a
  README may tell users to; in a project nobody installs, a Markdown page in its code only,
  blocks and spans, not in its prose, which credits where code came from, "the
  [AlphaFold](...)" model; a library's prose documents its API: DeepRobust's README lists
  its `Fast` defence in a table). A Python file the
  index could not read is searched as text, like configuration files. ``class B(A)``
  names ``A``: a base is named by every subclass, named or not. A file that defines a
  class or function of the same name at top level (and does not import the name) means
  its own by the bare name: two copies of a module (Point-MAE's
  ``segmentation/pointnet_util.py`` and ``segmentation/models/pointnet2_utils.py``, each
  with a ``PointNetSetAbstraction`` no model builds) do not name each other, and a
  runner's call of its own ``validate`` names no other runner's; the attribute
  (``pointnet_util.PointNetSetAbstraction``, also as the base of its own copy) and a
  string still do. Likewise a file that imports the name from one project definition
  (so-vits-svc's ``from modules.losses import discriminator_loss``) names that one by the
  bare name, not the copies elsewhere (``vdecoder/nsf_hifigan/models.py``'s); nor does a
  file that imports it from a package outside the project (OneFormer's ``from
  detectron2.evaluation import inference_on_dataset``) name the project's.
* **Or it is named only where it never runs.** Every mention outside its own
  definition lies in a block that a constant never lets run (``if args.masks:`` where no
  one passes ``--masks``, see :mod:`synclint.project.command_flags`; ``if
  self.stratified:`` where it is only ever ``False``) or in an import statement, and at
  least one lies in such a block: the project builds it only there, so it is never
  built (its code is cold, with that block's why). An import alone is no such evidence:
  a class only imported is named as before (a package re-exporting it for its users).
* **Or only classes that never run name it.** Every mention outside its own definition
  lies in the code of a class found unnamed (by these rules, asked again until nothing
  more is found): FairMOT's ``compute_rot_loss``, a loss by its name, is called only by
  ``BinRotLoss``, which nothing names. Not the code of a function with a loop over
  batches that nothing names: a public one may still be its users' to call.
* **Or, in a project nobody installs, it is named only where it is passed on.** Without
  ``setup.py``, a ``setup.cfg`` that describes a distribution or a ``[project]`` table no user imports the package, so
  imports that rename nothing and ``__all__`` only pass a name on (KAIR's
  ``from .multibox_loss import MultiBoxLoss``, ``__all__ = ['MultiBoxLoss']``); code
  must still build it. Not in a file that builds from its own namespace
  (``globals()[name]``, below): there its imports put the class in reach of a key
  computed at run time (``{name: globals()[name] for name in __all__}``); nor in
  ``hubconf.py``, whose every public callable, imported or defined, ``torch.hub``
  offers as an entry point (``torch.hub.load(repo, "RankLoss")``).
* **Nothing could register it.** It has no decorator.
* **It holds a root** (a method that is one, or a function nested in one), **or it
  replaces a method of a project base class**: the base's own ``self.method(...)`` runs
  that override only on an instance of it (conditional-flow-matching's
  ``CFMLitModule.step`` calls ``self.preprocess_batch``, which ``SplineCFMLitModule``,
  named nowhere, replaces). Such a call reaches the override only while some class that
  has it (the subclass, or one of its own subclasses that keeps it) may be built
  (:func:`synclint.project.hotness.compute_contexts`).

and the project allows the question at all:

* **Its steps were found** (see :func:`synclint.project.facts.facts_for_project`): in a
  library, users outside the project build its classes. A piece of a project too big to
  index at once does not know what the other pieces name.
* **No file of the program (tests, benchmarks and export tools aside: their context is
  decided) uses reflection that could build a class by a computed name**, as its
  text spells it (a comment or a string counts too): ``__subclasses__``,
  ``__init_subclass__`` or a metaclass (other than ``ABCMeta``) outside the header and body
  of a top-level class that defines or declares it (such a class's registry, s4's
  ``SequenceDataset.registry[cls._name_] = cls``, may build it and its subclasses, found
  by the last part of each base's spelling or the name it is imported as, or by a base
  that is no dotted name, and nothing else),
  ``sys.modules`` listed or iterated, or a module fetched by a computed name
  (``import_module``/``__import__`` of one, ``sys.modules[name]``) in a file that also
  fetches a member of something by a computed name (``getattr(module, class_name)``,
  ``vars``, ``dir``, ``__dict__``, ``inspect.getmembers``; not ``getattr(self, name)``)
  or returns the module from a function (its caller may look one up: ``getattr(load(path),
  name)``) (:func:`~synclint.project.reflection.find_reflection`), or binds it to a global
  that a file which looks members up so imports (``from config import MODELS``). Without such a lookup, what the
  fetched module builds is spelled (votenet's ``MODEL = importlib.import_module(FLAGS.model)``
  then ``MODEL.VoteNet(...)``), so nothing is ruled out; with one, a name that starts with
  a package spelled as a literal (``importlib.import_module("lib.test.tracker." + name)``,
  ``f"models.{arch}"``) rules out only what that package's modules hold. ``getattr`` (with a computed
  name), ``vars``, ``inspect.getmembers`` or ``__dict__`` of one of the project's modules
  (XMem's ``s2m_resnet.__dict__[backbone_name]``, ``models.__dict__[args.arch]``) rule out
  only what that module holds: the classes and functions it defines or imports (a
  package, also those of its submodules); all of them when it star-imports. ``getattr(nn,
  name)`` fetches from a module outside the project and rules nothing out; ``eval`` of a
  string does not either (the names it reads are spelled in the project's files: yolov7's
  model yamls), but ``eval``/``exec`` of a dotted name built from a template looks it up:
  ``eval('models.' + cfg.NAME)`` rules out what ``models`` holds, ReChorus's
  ``eval('{0}.{0}'.format(args.model_name))`` everything. A dotted path split in two
  (``get_obj_from_str``: ``module, cls = path.rsplit(".", 1)``, then
  ``getattr(import_module(module), cls)``) builds a class spelled where the path is,
  unless a template of a dotted name that begins with a package (``"models." + arch``, in
  any file) builds the path: then what that package's modules hold. ``sys.modules[__name__]``
  is the file's own namespace, as ``globals()`` (below).
* **Its own file does not build classes by a computed name**: ``globals()[name]``
  (CenterNet's ``globals()[base_name](pretrained=...)`` picks a backbone of its file)
  reaches the classes and functions the file defines, and those it imports, which it
  spells. It rules out that file's candidates only, unless the file star-imports names
  it never spells or fills its namespace by computed names (``globals()[key] = value``,
  ``globals().update(module.__dict__)``): then all of them.

Files whose context is decided otherwise (tests, export tools: cold as a whole) are left
as they are.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from synclint.project.cold_reasons import built_only_by_tests, never_named
from synclint.project.index import ClassId, FunctionId, ProjectIndex
from synclint.project.layout import is_installable, natural_root
from synclint.project.loss_names import is_loss_function
from synclint.project.mentions import blanked, named_words, python_text_of, spelled_in, spelled_names
from synclint.project.reflection import (
    SplitPathTemplates,
    builds_its_own_classes,
    fetches_a_member_by_name,
    find_reflection,
    has_star_import,
)
from synclint.project.summary import FileSummary, FunctionSummary

#: (first line, last line, why) of blocks that never run.
Blocks = tuple[tuple[int, int, str], ...]


def unnamed_classes(
    index: ProjectIndex, decided: Callable[[str], bool], closed: Mapping[FunctionId, Blocks] = MappingProxyType({}),
    tests: Callable[[str], bool] = lambda key: False,
) -> dict[ClassId, str | None]:
    """The top-level classes (file key, name) of ``index`` that nothing in the project names
    (or names only in ``closed`` blocks, which never run, and imports), and that hold a
    root; none when reflection could build a class by a computed name. Each with why when
    only closed blocks name it (it is never built), else None. ``decided``: whether a
    file's context is already decided (its classes are left alone); ``tests``: whether a
    file is test code, which in a project nobody installs builds what it names only for
    the tests (TraDeS's vendored nuscenes-devkit: `MTPLoss`, named only by the devkit's
    tests): such a class is cold, with that why.

    The project's Python files are read again here, and only here: few projects have
    candidates, so no summary pays for the search (the index's cache state holds every
    Python file's content hash, so a change to one that names a class is seen)."""
    candidates = _candidates(index, decided)
    found: dict[ClassId, str | None] = {}
    if not candidates:
        return found
    closed_lines = _closed_lines(closed)
    built_in_closed = _named_in_closed_blocks(closed_lines, {name for _key, name in candidates})
    # What only a class that never runs names never runs either (FairMOT's loss function
    # `compute_rot_loss`, a root by its name, called only by the unnamed `BinRotLoss`): the
    # search is asked again with that class's code blanked out, until nothing more is found.
    dead: dict[str, list[tuple[int, int]]] = {}
    dead_code: list[tuple[str, str]] = []  # (name, code) of the classes whose lines ``dead`` holds
    asked = set(candidates)
    while True:
        unnamed, unread, passed_on, tested = unnamed_in_python(
            index, asked, decided, closed_lines, built_in_closed, dead, tests)
        names = {name for _key, name in unnamed}
        if names:
            spelled = spelled_outside_python(index, unread, names)
            unnamed = {(key, name) for key, name in unnamed if name not in spelled}
        # (Each class's code read once, all the round's names asked of it at once: a project
        # of hundreds of such classes is no slower by their product.)
        namers = _dead_namers(dead_code, {name for _key, name in unnamed}) if dead else {}
        for key, name in sorted(unnamed):
            if name in tested:
                found[(key, name)] = built_only_by_tests(name)
            elif name in passed_on and name not in built_in_closed:
                found[(key, name)] = never_named(name, only_passed_on=True)
            elif dead:
                found[(key, name)] = never_named(name, only_inside=namers.get(name, []))
            else:
                found[(key, name)] = _never_built(name, built_in_closed.get(name))
        asked -= unnamed
        # (Only a class's code: a function with a loop over batches that nothing names may
        # still be its users' to call, and what it alone builds stays theirs.)
        spans = {(key, name, _span(index, key, name)) for key, name in unnamed
                 if name in index.entries[key].summary.classes}
        code = [(name, _span_text(key, span)) for key, name, span in sorted(spans)]
        if not asked or not any(spelled_names(text, {name for _key, name in asked}, {})[0] for _name, text in code):
            return found
        for key, _name, span in spans:
            dead.setdefault(key, []).append(span)
        dead_code += code


def spelled_outside_python(index: ProjectIndex, unread: list[str], names: set[str]) -> set[str]:
    """Those of ``names`` that the project's configuration files, scripts, notebooks or
    pages spell, or the Python files it could not read (``unread``): each may build what
    it names. A Markdown page's prose names nothing in a project nobody installs (it credits
    where code came from); a library's prose documents its API (see :func:`spelled_in`)."""
    return spelled_in(list(index.naming_files) + unread, names,
                      code_in_markdown=not is_installable(natural_root(index.root)))


def _span(index: ProjectIndex, key: str, name: str) -> tuple[int, int]:
    """The lines of the top-level class or function ``name`` of file ``key``."""
    summary = index.entries[key].summary
    definition = summary.classes.get(name) or summary.functions[name]
    return definition.line, definition.end_line


def _span_text(key: str, span: tuple[int, int]) -> str:
    text = python_text_of(key) or ""
    return "\n".join(text.split("\n")[span[0] - 1:span[1]])


def _dead_namers(dead_code: Iterable[tuple[str, str]], names: set[str]) -> dict[str, list[str]]:
    """Each of ``names`` with the classes already found never to run (``dead_code``: name,
    code) whose code spells it."""
    namers: dict[str, list[str]] = {}
    for other, text in dead_code:
        for name in spelled_names(text, names, {})[0]:
            namers.setdefault(name, []).append(other)
    return {name: sorted(set(others)) for name, others in namers.items()}


def _never_built(name: str, why: str | None) -> str | None:
    """The why of a class named only in blocks that never run (``why``: one block's)."""
    if why is None:
        return None
    return f"never runs: `{name}` is built only in blocks that never run: {why.removeprefix('never runs: ')}"


def _closed_lines(closed: Mapping[FunctionId, Blocks]) -> dict[str, list[tuple[int, int, str]]]:
    """File key -> the blocks of its functions that never run."""
    found: dict[str, list[tuple[int, int, str]]] = {}
    for (key, _qualname), blocks in closed.items():
        found.setdefault(key, []).extend(blocks)
    return found


def _named_in_closed_blocks(closed_lines: dict[str, list[tuple[int, int, str]]], names: set[str]) -> dict[str, str]:
    """Those of ``names`` that a block which never runs spells, with that block's why."""
    found: dict[str, str] = {}
    for key, blocks in sorted(closed_lines.items()):
        text = python_text_of(key)
        if text is None:
            continue
        lines = text.split("\n")  # (as the parser counts lines: not ``splitlines``, which splits at form feeds)
        for first, last, why in sorted(blocks):
            for name in spelled_names("\n".join(lines[first - 1:last]), names - found.keys(), {})[0]:
                found[name] = why
    return found



def _candidates(index: ProjectIndex, decided: Callable[[str], bool]) -> set[ClassId]:
    """Undecorated top-level classes that hold a root or replace a method of a project base
    class, and top-level functions that are roots by their name (a loss: CenterNet's
    ``_slow_neg_loss``, which nothing calls) and that their file hands to nothing (a
    decorator, a registry call)."""
    found = set()
    # A public function that loops over batches is its users' to call in a package they
    # install, or in a project of modules only (a library, like detkit's ``train``): only
    # a program's own loops are asked (Point-MAE's ``tools/runner_pretrain.py: validate``).
    users_call_loops = not is_a_program_nobody_installs(index, decided)
    for key, entry in index.entries.items():
        summary = entry.summary
        if decided(key):
            continue
        undecorated = {name for name, klass in summary.classes.items() if "." not in name and not klass.decorated}
        found.update((key, name) for name in undecorated if _overrides_a_base(index, (key, name)))
        for qualname, function in summary.functions.items():
            owner = qualname.split(".", 1)[0]
            if owner in undecorated and owner != qualname and function.root is not None:
                found.add((key, owner))
            elif (
                owner == qualname != "<module>" and function.cls is None and qualname not in summary.passed_as_values
                # ``_slow_neg_loss``: a step by name; Point-MAE's ``validate``: a loop over batches
                and (function.root is not None or is_loss_function(qualname)
                     or (_loops_over_batches(function) and not (users_call_loops and not qualname.startswith("_"))))
            ):
                found.add((key, qualname))
    return found


def is_a_program_nobody_installs(index: ProjectIndex, decided: Callable[[str], bool]) -> bool:
    """The project cannot be installed (see :func:`~synclint.project.layout.is_installable`)
    and some file whose context is not decided otherwise is a script: a program, whose
    code runs only as its own files call it, not a library whose users call its public
    functions and methods, and subclass its classes."""
    return not is_installable(natural_root(index.root)) and any(
        entry.summary.is_script and not decided(key) for key, entry in index.entries.items())


def _overrides_a_base(index: ProjectIndex, cid: ClassId) -> bool:
    """The class replaces a method of one of its project base classes, which the base's own
    code may call as ``self.method(...)``: that call runs the override only on an instance
    of this class (or of a subclass that keeps it)."""
    klass = index.klass(cid)
    if klass is None:
        return False
    bases = index.class_bases(cid)[1:]
    if not bases:
        return False
    inherited = set()
    for base in bases:
        base_class = index.klass(base)
        if base_class is not None:
            inherited.update(base_class.methods)
    return any(name in inherited for name in klass.methods if name != "__init__")


def _loops_over_batches(function: FunctionSummary) -> bool:
    """The function holds a loop over batches, each pass a step (a hot region)."""
    return any(region.kind == "hot" for region in function.regions)


def unnamed_in_python(
    index: ProjectIndex, candidates: set[ClassId], decided: Callable[[str], bool],
    closed_lines: dict[str, list[tuple[int, int, str]]], built_in_closed: Mapping[str, str],
    dead: Mapping[str, list[tuple[int, int]]] = MappingProxyType({}),
    tests: Callable[[str], bool] = lambda key: False,
) -> tuple[set[ClassId], list[str], set[str], set[str]]:
    """Those of ``candidates`` that no Python file the index parsed names: as a word of
    another file (two classes of one name in two files name each other), or in their own
    file outside their own definition; none when one of them could build a class by a
    computed name. A class some block that never runs names (``built_in_closed``) may be
    named there and in imports, and nowhere else; in a project nobody installs, any class
    may be named in imports that pass it on and in ``__all__``, but in a file that builds
    from its own namespace (``globals()[name]``) what it imports stays named. And the Python files it
    could not parse (their words are unknown: they are searched as text, like
    configuration files), and the names only such imports spell. The lines of ``dead``
    (file key -> spans of code that never runs) name nothing. In a project nobody
    installs, the files ``tests`` says are test code name nothing either: the names of
    ``candidates`` they alone spell are returned last (the program never builds those)."""
    left = set(candidates)
    tested: set[str] = set()
    unread = []
    passed_on: set[str] = set()
    # A package users install may re-export a class for them (``__init__.py``'s import,
    # ``__all__``): that names it. In a project nobody installs, only code can build it.
    imports_name = is_installable(natural_root(index.root))
    # (Every part of a project module's dotted name: an import from a package of none of
    # them comes from outside the project, however its modules are laid out.)
    project_packages = {part for module in index.modules for part in module.split(".")}
    split_paths = SplitPathTemplates()  # (``get_obj_from_str(path)``: what its templates' packages hold)
    registries: set[str] = set()  # (classes whose subclasses a registry of their own may build)
    for key, entry in index.entries.items():
        if "<module>" not in entry.summary.functions:
            unread.append(key)
            continue
        text = python_text_of(key)
        if text is None:
            return set(), [], set(), set()  # (unreadable since it was summarised: it may name any of them)
        split_paths.read(text, not decided(key))
        if not decided(key):
            reached = reflection_reach(index, key, text, registries)
            if reached is None:
                return set(), [], set(), set()
            # ``models.__dict__[args.arch]``: what that module holds may be built, nothing else.
            left = {(owner, name) for owner, name in left if not module_holds(index, reached, owner, name)}
        # ``globals()[name]``: the file builds from its own namespace, its classes and what
        # it imports (so its imports name what they bring in, re-exports or not); so does
        # ``torch.hub`` from ``hubconf.py``'s.
        by_own_namespace = not decided(key) and (builds_its_own_classes(text) or _offers_its_namespace(key))
        if by_own_namespace:
            left = {(owner, name) for owner, name in left if owner != key}
        if key in dead:
            text = blanked(text, dead[key])
        classes, functions = entry.summary.classes, entry.summary.functions
        defined = {name: (classes[name].line, classes[name].end_line) if name in classes
                   else (functions[name].line, functions[name].end_line) for owner, name in left if owner == key}
        # (A star import binds names the file never spells, modules among them: there any
        # attribute may be a module's.)
        shadowed = _defined_here(entry.summary) | _imported_from_outside(index, key, project_packages)
        modules = None if has_star_import(text) else entry.summary.imports.keys()
        spelled, outside = named_words(text, {name for _key, name in left}, defined, shadowed, modules)
        if not imports_name and not by_own_namespace and (spelled | outside) - built_in_closed.keys():
            before = spelled | outside
            spelled, outside = named_words(blanked(text, _re_exports(text, entry.summary.import_lines)),
                                           {name for _key, name in left}, defined, shadowed, modules)
            passed_on |= before - spelled - outside
        rescued = (spelled | outside) & built_in_closed.keys()
        if rescued:  # (the file spells a class built in a closed block: its imports and those blocks do not count)
            quiet = [*entry.summary.import_lines, *((first, last) for first, last, _why in closed_lines.get(key, ()))]
            still, still_outside = named_words(blanked(text, quiet), rescued, defined, shadowed, modules)
            spelled, outside = (spelled - rescued) | still, (outside - rescued) | still_outside
        named = {(owner, name) for owner, name in left if name in (outside if owner == key else spelled)}
        if not imports_name and tests(key):
            tested.update(name for _owner, name in named)  # (built there for the tests only)
            continue
        # A name the file imports from a project definition names that definition by its bare
        # mentions (the import line among them), and no other one of the name.
        elsewhere = _imported_definitions(index, key, {name for owner, name in named if owner != key}, project_packages)
        if elsewhere:
            beyond_bare, _ = named_words(text, set(elsewhere), {}, shadowed | elsewhere.keys(), modules)
            named = {(owner, name) for owner, name in named
                     if owner == key or name not in elsewhere or name in beyond_bare or elsewhere[name] == (owner, name)}
        left -= named
        if not left:
            break
    if split_paths.packages and left:
        reached = {module for package in split_paths.packages for module in _modules_under(index, package)}
        left = {(owner, name) for owner, name in left if not module_holds(index, reached, owner, name)}
    if registries and left:
        registered = _subclasses_by_name(index, registries)
        left = {(owner, name) for owner, name in left if name not in registered}
    return left, unread, passed_on, tested & {name for _owner, name in left}


def _subclasses_by_name(index: ProjectIndex, names: set[str]) -> set[str]:
    """``names`` and the names of the project's classes that derive from one of them, by the
    last part of each base's spelling (``base.SequenceDataset``), or the name a file imports
    under another (``from base import SequenceDataset as Base``), to a fixpoint: a base the
    index cannot resolve still counts, and a class another of the same name derives from
    counts too (more classes are only more that may be built); so does a class with a base
    that is no dotted name (``SequenceDataset[Config]``, ``make_base()``): it may be one."""
    found = set(names)
    classes = []
    for entry in index.entries.values():
        imports = entry.summary.imports
        for name, klass in entry.summary.classes.items():
            bases = {base.rpartition(".")[2] for base in klass.bases if base}
            bases |= {imported for base in klass.bases if base in imports
                      and (imported := imports[base][2]) is not None}
            classes.append((name, bases, "" in klass.bases))
    changed = True
    while changed:
        changed = False
        for name, bases, unspelled in classes:
            short = name.rpartition(".")[2]
            if short not in found and (unspelled or bases & found):
                found.add(short)
                changed = True
    return found


def _defined_here(summary: FileSummary) -> frozenset[str]:
    """The names a file defines at top level (classes and functions) and does not import:
    its bare mentions of them are its own (see :func:`~synclint.project.mentions.named_words`)."""
    own = {name for name in summary.classes if "." not in name}
    own.update(name for name in summary.functions if "." not in name and name != "<module>")
    own.update(function.qualname for function in summary.redefined if "." not in function.qualname)
    # (Nor one it imports under another name: ``from util import SetAbstraction as Base``
    # names the other file's, whose copy here may subclass it.)
    imported = {name for _level, _module, name in summary.imports.values() if name}
    return frozenset(own - summary.imports.keys() - imported)


def _imported_from_outside(index: ProjectIndex, key: str, project_packages: set[str]) -> frozenset[str]:
    """The names a file imports by name from a package outside the project: its bare
    mentions of them are the import's. OneFormer's ``train_net.py`` runs detectron2's
    ``inference_on_dataset`` (``from detectron2.evaluation import inference_on_dataset``),
    not the copy its ``oneformer/evaluation/evaluator.py`` defines."""
    return frozenset(
        local for local, (level, module, name) in index.entries[key].summary.imports.items()
        if name and not level and module and module.split(".")[0] not in project_packages
        and not _imported_from_elsewhere_too(index, key, local, project_packages)
    )


def _imported_from_elsewhere_too(index: ProjectIndex, key: str, local: str, project_packages: set[str]) -> bool:
    """Whether another import statement of the file (in a function, an ``except
    ImportError:`` fallback, the other branch of an ``if``) binds ``local`` from another
    module: ``summary.imports`` keeps the last one only, and the bare name may be either
    (``try: from apex.normalization import FusedLayerNorm as LayerNorm`` / ``except
    ImportError: from .layers import LayerNorm``), or a star import may bind it
    (``from losses import *`` beside a function's own ``from apex.losses import RankLoss``)."""
    summary = index.entries[key].summary
    level, module, name = summary.imports[local]
    return any((other_level, other) != (level, module) and (
        local in names or name in names
        or ("*" in names and _star_may_bind(index, key, other_level, other, local, project_packages)))
        for other_level, other, names in summary.module_imports)


def _star_may_bind(index: ProjectIndex, key: str, level: int, module: str, name: str, project_packages: set[str],
                   depth: int = 0) -> bool:
    """Whether ``from module import *`` in file ``key`` may bind ``name`` to a project
    definition: the project module defines or imports it, or star-imports a module that
    may (OneFormer's ``train_net.py`` star-imports ``oneformer.data.build``, which has no
    ``inference_on_dataset``). A module outside the project binds no project definition;
    a project-looking one the index does not find may bind anything."""
    absolute = index.absolute_module(key, level, module)
    target = index.modules.get(absolute)
    if target is None:
        return bool(level) or absolute.split(".")[0] in project_packages
    summary = index.entries[target].summary
    if name in summary.functions or name in summary.classes or name in summary.imports:
        return True
    return any("*" in names and (depth >= 8 or _star_may_bind(index, target, lvl, mod, name, project_packages, depth + 1))
               for lvl, mod, names in summary.module_imports)


def _imported_definitions(index: ProjectIndex, key: str, names: set[str], project_packages: set[str]) -> dict[str, ClassId]:
    """The names file ``key`` imports that resolve to a project function or class, each with
    it: the file's bare mentions of such a name are that definition's, not those of other
    definitions of the name. so-vits-svc's ``train.py`` runs ``modules.losses.
    discriminator_loss``, imported by name, not the copy ``vdecoder/nsf_hifigan/models.py``
    defines."""
    found = {}
    for local, (_level, _module, name) in index.entries[key].summary.imports.items():
        if not name or local not in names or _imported_from_elsewhere_too(index, key, local, project_packages):
            continue
        kind, target, qualname = index.resolve_name(key, "", local)
        if kind in ("function", "class") and target is not None and qualname is not None and "." not in qualname \
                and not _also_imported(index, target, qualname):
            found[local] = (target, qualname)
    return found


def _also_imported(index: ProjectIndex, key: str, name: str) -> bool:
    """Whether file ``key``, which defines ``name``, also binds it by an import: a fallback
    (``try: from ._ext import DeformConv`` / ``except ImportError: class DeformConv``), an
    override after the definition. Which of them the name holds is decided when it runs,
    so a mention of the name may be either."""
    entry = index.entries.get(key)
    return entry is not None and (name in entry.summary.imports
                                  or any(name in names for _level, _module, names in entry.summary.module_imports))


def _re_exports(text: str, import_lines: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """(first, last line) of the statements of ``text`` that only pass names on: its
    imports that rename nothing (``from .losses import RankLoss as Loss`` builds
    ``RankLoss`` under another name wherever ``Loss`` is called), and its top-level
    ``__all__`` assignments (KAIR's ``retinaface/layers/modules/__init__.py``:
    ``from .multibox_loss import MultiBoxLoss``, ``__all__ = ['MultiBoxLoss']``)."""
    lines = text.split("\n")
    spans = [(first, last) for first, last in import_lines
             if not _RENAMES.search("\n".join(lines[first - 1:last]))]
    if "__all__" in text:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return spans
        spans += [(node.lineno, node.end_lineno or node.lineno) for node in tree.body
                  if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                  and any(isinstance(target, ast.Name) and target.id == "__all__"
                          for target in (node.targets if isinstance(node, ast.Assign) else [node.target]))]
    return spans


#: `` as `` in an import statement: a name bound under another name.
_RENAMES = re.compile(r"\bas\b")


def _offers_its_namespace(path: str) -> bool:
    """``hubconf.py``: ``torch.hub`` offers every public callable it holds, defined or
    imported, as an entry point (``torch.hub.load(repo, "RankLoss")``)."""
    return os.path.basename(path) == "hubconf.py"



def reflection_reach(index: ProjectIndex, key: str, text: str, registries: set[str] | None = None) -> set[str] | None:
    """The project modules (file keys) whose members the program's file ``key`` lists or
    fetches by a computed name (``s2m_resnet.__dict__[backbone_name]``, ``getattr(models,
    cfg.arch)``, ``getattr(import_module("models." + arch), name)``: every module of
    ``models``); None when it could build any class by a computed name (``sys.modules``,
    ``__subclasses__``, ``import_module`` of a computed name...), or fetches from a project
    module that star-imports (its namespace holds names it never spells). (Not asked of a
    test that patches ``sys.modules`` or a benchmark that imports a module by name: what
    they build runs in the test or the benchmark, not in the program's steps.)

    ``registries``: where the names of the file's classes whose subclasses a registry of
    their own may build (``__init_subclass__``, a metaclass) are added; without it, such a
    class rules out every class, as ``__subclasses__`` does."""
    reflection = find_reflection(text)
    if reflection.marker is not None or (reflection.registries and registries is None):
        return None
    if registries is not None:
        registries |= reflection.registries
    packages = set(reflection.packages)
    # (``MODELS = importlib.import_module(sys.argv[1])``, imported by a file that may look
    # a member of it up by a computed name: ``getattr(MODELS, name)``)
    for name, package in reflection.exported:
        if _imported_elsewhere(index, key, name):
            if package is None:
                return None
            packages.add(package)
    reached = set()
    for package in packages:
        under = _modules_under(index, package)
        if not under and any(package.split(".")[0] in entry.name.split(".") for entry in index.entries.values()):
            return None  # (a project package the index lays out otherwise: any of its modules)
        if any(_star_imports_or_unread(index.entries[module].summary) for module in under):
            return None
        reached |= under
    for name in reflection.modules:
        kind, target, _qualname = index.resolve_dotted(key, "", name)
        if kind != "module" or target is None:
            continue
        if _star_imports_or_unread(index.entries[target].summary):
            return None
        reached.add(target)
    return reached


def _imported_elsewhere(index: ProjectIndex, key: str, name: str) -> bool:
    """Whether another file imports ``name`` from file ``key`` (``from config import
    MODELS``) and looks a member up by a computed name (``getattr(MODELS, name)``; one it
    cannot read may)."""
    module = index.entries[key].name
    for other, entry in index.entries.items():
        if other != key and any(imported == name and index.absolute_module(other, level, source) == module
                                for level, source, imported in entry.summary.imports.values()):
            text = python_text_of(other)
            if text is None or fetches_a_member_by_name(text):
                return True
    return False


def _star_imports_or_unread(summary: FileSummary) -> bool:
    """A file the index could not read, or one that star-imports: its namespace holds
    names it never spells."""
    return "<module>" not in summary.functions or any("*" in names for _level, _module, names in summary.module_imports)


def _modules_under(index: ProjectIndex, package: str) -> set[str]:
    """The project modules (file keys) of the dotted ``package`` (``lib.models`` holds
    ``lib.models.net``), the package's own included; matched as a run of parts anywhere in
    a module's name, so that a package found under a ``sys.path`` entry the index does not
    know (``ltr.admin`` for ``external.AR.ltr.admin``) still counts (more modules are only
    more that may be built)."""
    wanted = f".{package}."
    return {key for key, entry in index.entries.items() if wanted in f".{entry.name}."}


def module_holds(index: ProjectIndex, modules: set[str], owner: str, name: str) -> bool:
    """Whether one of ``modules`` (file keys) holds the class or function ``name`` of file
    ``owner``: it defines it, or imports it (or, a package, the submodule that defines it).
    A lookup there by a computed name may build it."""
    owner_module = index.entries[owner].name
    for module in modules:
        if module == owner or _imports(index.entries[module].summary, owner_module, name):
            return True
        package = index.entries[module].name
        if module.endswith("__init__.py") and (owner_module.startswith(package + ".") or any(
                entry.name.startswith(package + ".") and _imports(entry.summary, owner_module, name)
                for entry in index.entries.values())):
            # (a package's ``__dict__`` holds the submodules imported so far, and a lookup
            # in one of them, ``getattr(getattr(models, family), name)``, what it imports)
            return True
    return False


def _imports(summary: FileSummary, owner_module: str, name: str) -> bool:
    """The file imports ``name`` (under any name: ``from losses import RankLoss as
    Criterion``) or the module ``owner_module`` that defines it (``import losses as L``)."""
    last = owner_module.rsplit(".", 1)[-1]
    return name in summary.imports or last in summary.imports or any(
        imported in (name, last) or (imported is None and module == owner_module)
        for _level, module, imported in summary.imports.values())
