"""Methods that loop over batches and that nothing in the project names: they never run.

A loop over a DataLoader is a root of the hot call graph wherever it stands
(:mod:`synclint.project.hotness`): a training or evaluation method runs it every step.
But a method runs only when something calls it, and a call spells its name (as an
attribute, ``trainer.train_discriminatively(loader)``, or as a string handed to
``getattr``). continual-learning's ``FeatureExtractor.train_discriminatively`` loops over
its ``train_loader``, and no file, configuration, script or page of the project spells
``train_discriminatively`` but its own ``def``: its loop is no step, and what it reports
nobody's training runs. This is :mod:`synclint.project.unnamed_classes`'s question asked
of a method, and it is asked only where that answer can hold:

* **A project nobody installs, with a script** (as for a public function that loops
  over batches): a library's users call its methods, which the project need not.
* **The method is a plain one of a top-level class**: not a dunder (Python calls those
  by their own names), not a root by its name (``training_step``: a framework calls it),
  not handed to a decorator (which may register it), and not of a class the project
  never builds (those are :mod:`synclint.project.unnamed_classes`'s).
* **Nothing outside the project calls it by name**: every base of the class, and of its
  project bases, is the project's, a builtin or torch's, whose classes call only methods
  they define themselves (``forward``, ``step``...: not asked). A Lightning module's or
  a Hugging Face ``Trainer``'s methods are the framework's to call, and so are those of a
  project class that one of those derives from (a mixin).
* **No text names it** outside its own definition: no word of a Python file of the
  project (code, a string, an attribute: ``self.train_discriminatively``; not a comment
  or a docstring), nor of a configuration file, script, notebook or documentation page.
* **No computed name could reach it**: no file of the program looks an attribute up by a
  name built from a template whose literal pieces the method's name holds
  (``getattr(self, f"train_{mode}")``, ``"train_" + mode``), nor by a name taken from a
  listing of members (``dir(obj)``, ``vars``, ``__dict__``, ``inspect.getmembers``)
  beside a lookup by a computed name, nor lists a class's members with their values
  (``inspect.getmembers(obj)``, ``vars(type(obj)).items()``), nor uses the reflection
  that rules unnamed classes out (:func:`~synclint.project.reflection.find_reflection`),
  nor imports a library that
  makes methods commands (``fire.Fire(Trainer)``: ``python main.py train_discriminatively``).

A method found here is keyed like a class (file key, ``Class.method``) among the
unnamed; its code, and what it nests, carries the same why.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable

from synclint.project.index import ClassId, ProjectIndex
from synclint.project.mentions import blanked, named_words, python_text_of
from synclint.project.reflection import find_reflection
from synclint.project.summary import FunctionSummary
from synclint.project.unnamed_classes import is_a_program_nobody_installs, spelled_outside_python

#: Methods torch's own base classes call by name (``nn.Module.__call__`` runs
#: ``forward``; an optimizer's ``step``, a scheduler's ``get_lr``, an autograd
#: ``Function``'s ``backward``...): never asked, whatever the project spells.
_CALLED_BY_TORCH = frozenset({
    "forward", "backward", "setup_context", "jvp", "vjp", "vmap", "step", "zero_grad", "get_lr",
    "_get_closed_form_lr", "extra_repr", "train", "eval", "state_dict", "load_state_dict", "reset_parameters",
    "_load_from_state_dict", "_save_to_state_dict", "_apply", "_replicate_for_data_parallel",
})
#: A lookup of an attribute by a name computed at run time: ``getattr(obj, <not a
#: literal>)``, ``hasattr`` (a guard before a call), ``operator.methodcaller``/``attrgetter``,
#: ``inspect.getattr_static``, ``__getattribute__``, and ``eval``/``exec`` of code
#: (``eval(f"model.train_{mode}(loader)")``).
_LOOKUP = re.compile(
    r"(?:\b(?:getattr_static|getattr|hasattr|methodcaller|attrgetter|__getattribute__)|(?<![\w.])(?:eval|exec))\(")
#: Lookups whose name is their second argument (``getattr(obj, name)``).
_NAME_SECOND = ("getattr", "hasattr")
#: Libraries that make an object's methods commands (``fire.Fire(Trainer)``,
#: jsonargparse's ``CLI(Trainer)``): a command line, which the project need not spell,
#: names the method that runs.
_COMMAND_LINES = frozenset({"fire", "jsonargparse"})
#: A listing of members: any method's name may come from one.
_LISTING = re.compile(r"\bdir\(|\bvars\(|\.__dict__\b|\bgetmembers\(")
#: A listing of members that yields the members themselves, no name to look up: a
#: method may be called from it (``inspect.getmembers(obj)``, ``vars(type(obj)).items()``,
#: ``cls.__dict__.values()``; not an instance's ``vars(args).items()``, which holds no method).
_MEMBERS_LISTED = re.compile(
    r"\bgetmembers\(|(?:\btype\([^()\n]*\)|\bcls|\b__class__|\b[A-Z]\w*)(?:\.__dict__|\))\.(?:items|values)\(")
#: A string literal's text (any prefix): the pieces a template is built from.
_LITERAL = re.compile(r"""(?<![\w])([a-zA-Z]{0,2})(["'])((?:(?!\2)[^\\\n]|\\.)*)\2""")
#: What fills a template: ``{mode}``, ``{}``, ``%s``.
_FILLED = re.compile(r"\{[^{}]*\}|%[sdr]")
#: ``.format(`` or `` % `` after a literal: the literal is a template.
_FORMATTED = re.compile(r"\s*(?:\.format\(|%)")
#: `` + `` after a literal: it is joined to what follows.
_JOINED = re.compile(r"\s*\+")
#: A piece of a name (or nothing, where the template starts or ends with a fill).
_WHOLE_WORD = re.compile(r"\w*")
_WORD_AT_END = re.compile(r"\w*$")


def unnamed_methods(
    index: ProjectIndex, decided: Callable[[str], bool], unnamed_classes: set[ClassId]
) -> dict[ClassId, str | None]:
    """(file key, ``Class.method``) of each method that loops over batches and that nothing
    names (see the module's docstring), each with None (its why is
    :func:`~synclint.project.cold_reasons.never_named`'s). ``decided``: whether a file's
    context is decided as a whole; ``unnamed_classes``: top-level classes already found
    never built."""
    if not is_a_program_nobody_installs(index, decided):
        return {}
    candidates = _candidates(index, decided, unnamed_classes)
    if not candidates:
        return {}
    names = {qualname.rsplit(".", 1)[1] for _key, qualname, _function in candidates}
    own_spans: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for key, qualname, function in candidates:
        own_spans.setdefault(key, {}).setdefault(qualname.rsplit(".", 1)[1], []).append(
            (function.line, function.end_line))
    unread = []
    templates: list[re.Pattern[str]] = []
    looks_up = False
    for key, entry in index.entries.items():
        if not names:
            return {}
        if "<module>" not in entry.summary.functions:
            unread.append(key)
            continue
        text = python_text_of(key)
        if text is None:
            return {}  # (unreadable since it was summarised: it may name any of them)
        templates += _templates(text)
        if not decided(key):
            if any(level == 0 and module.partition(".")[0] in _COMMAND_LINES
                   for level, module, _name in entry.summary.imports.values()):
                return {}
            computed, listed = _computed_lookups(text)
            reflection = find_reflection(text)
            if listed or _MEMBERS_LISTED.search(text) or reflection.marker is not None or reflection.registries:
                return {}
            looks_up = looks_up or computed
        # (A candidate's own code does not name it: a recursive call runs only once it does.
        # The other candidates' code does: a method another one calls runs when that one
        # does, and a dead method's call of another keeps that one named.)
        spans = own_spans.get(key, {})
        names -= named_words(text, names - spans.keys(), {})[0]
        for name in names & spans.keys():
            names -= named_words(blanked(text, spans[name]), {name}, {})[0]
    if names:
        names -= spelled_outside_python(index, unread, names)
    if looks_up:  # (a template anywhere may build the name a lookup somewhere fetches)
        names = {name for name in names if not any(template.fullmatch(name) for template in templates)}
    return {(key, qualname): None for key, qualname, _function in candidates if qualname.rsplit(".", 1)[1] in names}


def _candidates(
    index: ProjectIndex, decided: Callable[[str], bool], unnamed_classes: set[ClassId]
) -> list[tuple[str, str, FunctionSummary]]:
    """(file key, ``Class.method``, summary) of the plain methods of top-level classes that
    loop over batches and that nothing outside the project could call by name."""
    found = []
    library_called: set[ClassId] | None = None
    for key, entry in index.entries.items():
        if decided(key):
            continue
        summary = entry.summary
        for qualname, function in summary.functions.items():
            owner, dot, name = qualname.partition(".")
            if (
                not dot or "." in name or owner not in summary.classes or (key, owner) in unnamed_classes
                or name.startswith("__") or name in _CALLED_BY_TORCH or function.root is not None
                or name in summary.passed_as_values
                or not any(region.kind == "hot" for region in function.regions)
            ):
                continue
            if library_called is None:
                library_called = _bases_of_library_classes(index)
            if (key, owner) not in library_called:
                found.append((key, qualname, function))
    return found


def _bases_of_library_classes(index: ProjectIndex) -> set[ClassId]:
    """The project classes whose methods a library may call by name: each class with a
    base, or a project base with one, of neither the project nor a builtin nor torch
    (:func:`_only_project_or_torch_bases`), and each project base of such a class (a
    mixin of the project's under a Hugging Face ``Trainer``, whose ``evaluate`` calls the
    mixin's ``evaluation_loop``)."""
    found: set[ClassId] = set()
    for key, entry in index.entries.items():
        for name in entry.summary.classes:
            if (key, name) not in found and not _only_project_or_torch_bases(index, (key, name)):
                found.update(index.class_bases((key, name)))
    return found


def _only_project_or_torch_bases(index: ProjectIndex, cid: ClassId) -> bool:
    """Every base of the class and of its project bases is a project class, a builtin
    (``object``) or torch's (``nn.Module``): no library's code calls its methods by name."""
    for ancestor in index.class_bases(cid):
        klass = index.klass(ancestor)
        if klass is None:
            return False
        for base in klass.bases:
            if not base:  # (no dotted name: ``*MIXINS``, ``base_class()``, may be any library's)
                return False
            if index.resolve_dotted(ancestor[0], "", base)[0] == "class":
                continue
            head = base.partition(".")[0]
            imported = index.entries[ancestor[0]].summary.imports.get(head)
            if imported is None:
                if not hasattr(builtins, head):
                    return False
                continue
            level, module, _name = imported
            if level or module.partition(".")[0] != "torch":
                return False
    return True


def _computed_lookups(text: str) -> tuple[bool, bool]:
    """Whether the file looks an attribute up by a computed name (``getattr(obj, name)``,
    ``getattr(self, f"train_{mode}")``), and whether it also lists members (``dir(obj)``,
    ``vars``, ``__dict__``, ``inspect.getmembers``): then any method's name may be one."""
    if _LOOKUP.search(text) is None:
        return False, False
    for match in _LOOKUP.finditer(text):
        argument = _name_argument(text, match.end(), match.group().startswith(_NAME_SECOND))
        if argument is None or not argument.strip():
            continue
        literal = _LITERAL.fullmatch(argument.strip())
        if literal is None or "f" in literal.group(1).lower():
            return True, _LISTING.search(text) is not None
    return False, False


def _templates(text: str) -> list[re.Pattern[str]]:
    """The names the file's templates can build, each as a pattern of a whole name: an
    f-string (``f"train_{mode}"``), a literal joined to something (``"train_" + mode``, ``mode
    + "_step"``) or formatted (``"train_%s" % mode``, ``"train_{}".format(mode)``): the word
    characters next to its fills (code around a name, ``f"model.train_{mode}(loader)"``,
    builds ``train_...``; ``f"train/{key}"`` builds none), its pieces between fills parts of
    a name."""
    found = []
    for match in _LITERAL.finditer(text):
        prefix, body = match.group(1).lower(), match.group(3)
        if "f" in prefix or "{" in body or "%" in body:
            parts = _FILLED.split(body) if ("f" in prefix or _FORMATTED.match(text, match.end())) else [body]
        else:
            before = text[max(0, match.start() - 3):match.start()].rstrip()
            after = _JOINED.match(text, match.end()) is not None
            parts = (["", body] if before.endswith("+") else [body]) + ([""] if after else [])
        if len(parts) < 2:
            continue
        # (Code around a name, ``eval(f"model.train_{mode}(loader)")``: the name is what
        # stands next to the fill, ``train_``; a piece between two fills must be part of it.)
        parts[0] = _WORD_AT_END.search(parts[0]).group()
        parts[-1] = _WHOLE_WORD.match(parts[-1]).group()
        # (A template of fills and a letter or two, a model's label ``"{}_{}c{}".format(...)``,
        # names no method: its literal pieces must say something of the name.)
        if not all(_WHOLE_WORD.fullmatch(part) for part in parts) or len("".join(parts)) < 3:
            continue
        found.append(re.compile(r"\w*".join(map(re.escape, parts))))
    return found


def _name_argument(text: str, start: int, second: bool) -> str | None:
    """The text of the name argument of the call whose ``(`` ends at ``start``: its second
    (``getattr(obj, name)``) or first (``methodcaller(name)``); None when it is cut short."""
    depth, argument, arguments = 0, [], []
    for position in range(start, min(len(text), start + 2000)):
        char = text[position]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                arguments.append("".join(argument))
                break
            depth -= 1
        elif char == "," and depth == 0:
            arguments.append("".join(argument))
            argument = []
            continue
        argument.append(char)
    else:
        return None
    # (``object.__getattribute__(self, name)``, ``obj.__getattribute__(name)``: its last)
    wanted = 1 if second or len(arguments) == 2 and text.startswith("__getattribute__", start - 17) else 0
    return arguments[wanted] if len(arguments) > wanted else None
