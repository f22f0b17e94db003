"""Reflection in one file's text that could build a class, or import a module, by a
computed name: ``__subclasses__``, a metaclass, ``globals()[name]``, ``getattr(module,
name)``, ``importlib.import_module(name)``, ``eval`` of a dotted name built from a
template. :mod:`synclint.project.unnamed_classes` asks :func:`find_reflection` what such a
file could build, and :mod:`synclint.project.unimported_modules` asks
:func:`find_module_loading_in_packages` which modules it could import. Text, not the tree: a
match in a comment or a string counts too (erring towards "may be built"), and the search
costs a scan, not a walk.
"""

from __future__ import annotations

import ast
import re
from typing import NamedTuple

_NOT_A_STRING_ARGUMENT = r"""(?!\s*(?:"[^"\n]*"|'[^'\n]*')\s*[,)])"""
#: Reflection that could build any class by a computed name, spelled anywhere in the file
#: (a comment or a string too: it errs towards ruling unnamed classes out). Each with a
#: piece of text that it needs, so that most files pay a substring search only.
_MARKERS = tuple((hint, re.compile(pattern)) for hint, pattern in (
    ("__subclasses__", r"__subclasses__"),
    ("__init_subclass__", r"__init_subclass__"),
    # (Listed or iterated: ``sys.modules.items()``, ``for name in sys.modules``. Read by a
    # key, it is a module fetched by a computed name: see _MODULE_BY_NAME.)
    # (Asked whether it holds a name, ``"wandb" in sys.modules``, it builds nothing.)
    ("sys.modules", r"\bfor\b[^\n:]*\bin\s+sys\.modules\b|(?<!\bin\s)sys\.modules\b(?!\s*\[|\s*\.(?:get|pop|setdefault)\()"),
    ("metaclass", r"\bmetaclass\s*=\s*(?!(?:abc\.)?ABCMeta\b)"),
    ("(type)", r"\bclass\s+\w+\(type\)"),
))
#: Calls that list or fetch the members of the dotted name they capture by a computed
#: name: ``getattr(models, name)`` (not ``getattr(models, "Net")``), ``vars(losses)``,
#: ``inspect.getmembers(heads)``; and ``registry.__dict__`` (whose name ends the text before it).
_LOOKUPS = tuple((hint, re.compile(pattern)) for hint, pattern in (
    ("getattr(", r"getattr\(\s*([^\W\d][\w.]*)\s*," + _NOT_A_STRING_ARGUMENT),
    ("vars(", r"vars\(\s*([^\W\d][\w.]*)\s*\)"),
    ("getmembers(", r"getmembers\(\s*([^\W\d][\w.]*)\s*[,)]"),
))
_DICT = re.compile(r"\.__dict__\b")
#: ``globals()[name]``: the file's own namespace, which holds the classes it defines and
#: those it imports by name (each spelled in it, so named); a star import brings in names
#: the file never spells.
_OWN_GLOBALS = re.compile(r"globals\(\s*\)|sys\.modules\[\s*__name__\s*\]")
#: What else hands a file's own namespace to a computed name: ``locals()`` and ``vars()``
#: (at top level, its globals), and ``fire.Fire()`` with no component, which offers every
#: function of the calling module as a command (``python cli.py evaluate``).
_OWN_NAMESPACE = re.compile(r"\b(?:locals|vars)\(\s*\)")
#: ``fire.Fire()`` with no component: the caller's namespace, the module's functions among it.
_FIRE = re.compile(r"\bFire\(\s*(?:\)|[^\W\d]\w*\s*=(?!=))")
_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.MULTILINE)
#: ``globals()[key] = value``, ``globals().update(table)``: a file that fills its own
#: namespace by computed names may put any file's classes there, as a star import does.
_FILLS_GLOBALS = re.compile(
    r"globals\(\s*\)\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault|__setitem__)\()"
    # (the same namespace as the module object: ``setattr(sys.modules[__name__], name, value)``)
    r"|setattr\(\s*sys\.modules\[\s*__name__\s*\]\s*," + _NOT_A_STRING_ARGUMENT
    + r"|sys\.modules\[\s*__name__\s*\]\.__dict__\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault)\()")
_DOTTED_AT_END = re.compile(r"(?<![\w.])[^\W\d][\w.]*$")


def has_star_import(source: str) -> bool:
    """``from pkg import *`` somewhere in ``source``: it binds names the file never spells."""
    return "import" in source and _STAR_IMPORT.search(source) is not None


def _uses_own_globals(source: str) -> bool:
    return ("globals(" in source or "sys.modules" in source) and _OWN_GLOBALS.search(source) is not None


def builds_its_own_classes(source: str) -> bool:
    """The file could build a class of its own by a computed name: ``globals()[name]``
    (CenterNet's ``globals()[base_name](pretrained=...)`` picks one of the backbones the
    file defines), ``locals()`` or ``vars()`` (at top level, the same namespace),
    ``fire.Fire()`` with no component (every function of the file is a command), or ``eval``
    of a name made from a template that begins with a word of its own (VIBE's
    ``eval(f'get_{src}_joint_names')``: a name of the file's namespace, see
    :data:`_OWN_NAME_TEMPLATE`). What else its namespace holds it imports by name, spelling each."""
    return _uses_own_globals(source) or ("eval(" in source and _EVAL_OF_AN_OWN_NAME.search(source) is not None) or (
        "Fire(" in source and _FIRE.search(source) is not None) or (
        ("locals(" in source or "vars(" in source) and _OWN_NAMESPACE.search(source) is not None
        and _namespace_call_outside_functions(source))


def _namespace_call_outside_functions(source: str) -> bool:
    """Whether a ``locals()``/``vars()`` call of the file may read the module's namespace: one outside every function and class body (simple-HRNet's ``Train.
    __init__`` logs its arguments with ``locals().items()``: a function's own names). A
    file that does not parse may."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("locals", "vars") and not node.args):
            return True
        for child in ast.iter_child_nodes(node):
            if isinstance(child, scopes):
                # (a decorator, a base, a class keyword, a default or an annotation is evaluated in
                # the enclosing scope)
                pending.extend([*getattr(child, "decorator_list", ()), *getattr(child, "bases", ()),
                                *(keyword.value for keyword in getattr(child, "keywords", ()))])
                if getattr(child, "returns", None) is not None:
                    pending.append(child.returns)
                arguments = getattr(child, "args", None)
                if isinstance(arguments, ast.arguments):
                    pending.extend([*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)])
                    pending.extend(argument.annotation for argument in (
                        *arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg)
                        if argument is not None and argument.annotation is not None)
            else:
                pending.append(child)
    return False


class Reflection(NamedTuple):
    """What one file's reflection lets a computed name build (see :func:`find_reflection`)."""

    #: What rules unnamed classes out for the whole project, or None.
    marker: str | None
    #: Dotted names whose members the file lists or fetches by a computed name.
    modules: frozenset[str]
    #: Dotted packages any of whose modules the file may fetch by a computed name and then
    #: look a member up in by one: ``getattr(import_module("models." + arch), name)``.
    packages: frozenset[str] = frozenset()
    #: The top-level names the file binds to a module fetched by a computed name, each with
    #: its literal package (or None), where the file looks nothing up by a computed name: a
    #: file that imports the name may (``from config import MODELS``, ``getattr(MODELS,
    #: name)``).
    exported: frozenset[tuple[str, str | None]] = frozenset()
    #: The file's classes whose subclasses may be registered by their own definition and
    #: built by a computed name: each defines ``__init_subclass__`` or declares a metaclass
    #: (see :func:`registering_classes`). Nothing else may be built so.
    registries: frozenset[str] = frozenset()


def find_reflection(source: str) -> Reflection:
    """Reflection in the file's text that could build a class by a computed name.

    Returns what rules unnamed classes out for the whole project (``__subclasses__``,
    ``__init_subclass__``, a metaclass, ``sys.modules`` listed or iterated, ``globals()``
    in a file that star-imports names it never spells or fills its namespace by computed
    names, ``globals()[key] = value``: see :func:`builds_its_own_classes` for the others;
    a module fetched by a computed name, below), or None; the dotted names whose members
    the file lists or fetches by a computed name (``getattr(models, cfg.arch)``,
    ``vars(losses)``): the index decides whether they are project modules (``getattr(nn,
    name)`` on torch's is not); and the packages of modules fetched by a computed name.

    A module fetched by a computed name (``importlib.import_module(args.model)``,
    ``__import__(name)``, ``sys.modules[name]``) builds only what the file spells, unless
    the file also fetches a member of something by a computed name (``getattr(module,
    class_name)``, ``module.__dict__``, ``vars(module)``, ``dir(module)``,
    ``inspect.getmembers``; not ``getattr(self, name)``) or a function returns the module
    (its caller may: ``getattr(load(path), name)``; a global it binds to the module, the
    index asks of the files that import it): votenet's ``MODEL =
    importlib.import_module(FLAGS.model)`` then ``MODEL.VoteNet(...)`` builds a class
    its name spells. With such a lookup, any class of any module may be built, unless
    every such name starts with a package spelled as a literal (``"models." + name``,
    ``f"models.{name}"``, ``"lib.config.%s.config" % name``, ``"models.{}".format(name)``,
    ``import_module("." + name, "pkg.models")``; ``__import__`` returns the top package:
    its first part): then only what that package's modules hold.

    ``eval`` and ``exec`` of a string are not counted: the strings they read name the
    classes in the project's own files (yolov7's ``eval(m)`` of its model yamls' module
    names); of a dotted name built from a template, they look it up by a computed name
    (:data:`_EVAL_OF_A_TEMPLATE`): a member of the name the template begins with, as the
    file binds it, and of the package of that name. Text, not the tree: a match in a
    comment or a string counts too, and the search costs a scan, not a walk.
    """
    registries: set[str] = set()
    for hint, pattern in _MARKERS:
        if hint in source and (marker := pattern.search(source)) is not None:
            scoped = registering_classes(source, pattern) if hint in _SCOPED_HINTS else None
            if scoped is None:
                return Reflection("`sys.modules`" if hint == "sys.modules" else f"`{marker.group().rstrip('( =')}`",
                                  frozenset())
            registries |= scoped
    if _uses_own_globals(source):
        if has_star_import(source):
            return Reflection("`globals()` with `import *`", frozenset())
        if _FILLS_GLOBALS.search(source):
            return Reflection("`globals()` filled by computed names", frozenset())
    modules = {match.group(1) for hint, pattern in _LOOKUPS if hint in source for match in pattern.finditer(source)}
    if "__dict__" in source:
        for match in _DICT.finditer(source):
            owner = _DOTTED_AT_END.search(source, max(0, match.start() - 200), match.start())
            if owner is not None:
                modules.add(owner.group())
    packages: set[str] = set()
    exported: set[tuple[str, str | None]] = set()
    if "eval(" in source or "exec(" in source:
        # Each template: where it starts, where its expression ends, and the eval's text.
        templates = [(match.end(), _closing(source, match.end()), match.group())
                     for match in _EVAL_OF_A_TEMPLATE.finditer(source)]
        for match in _EVAL_OF_A_NAME.finditer(source):
            # (SELFRec's ``import_str = f"from model.{kind}.{name} import {name}"``, then
            # ``exec(import_str)``: the template in the statement above that last binds the
            # name; not one anywhere in the file, as yolov5's ``s = f"..."`` before an
            # unrelated ``s = eval(s)`` of a camera's number)
            line = source.rfind("\n", 0, match.start()) + 1
            binding = None
            for binding in re.compile(rf"(?m)^[ \t]*{match.group(1)}[ \t]*=(?!=)").finditer(source, 0, line):
                pass
            if binding is not None and _TEMPLATE_AT.match(source, binding.end()) is not None:
                end = source.find("\n", binding.end())
                templates.append((binding.end(), len(source) if end < 0 else end, match.group().partition("(")[0]))
        for start, end, call in templates:
            if _OWN_NAME_TEMPLATE.match(source, start):
                continue  # a name of the file's own namespace (see builds_its_own_classes)
            prefix = _PACKAGE_PREFIX.match(source, start)
            if prefix is None or _PICKED.search(source, start, end):
                return Reflection(f"`{call.rstrip('( ')}` of a computed name", frozenset())
            dotted = (prefix.group(2) or prefix.group(4)).rstrip(".")
            packages.add(dotted)
            # (Its first part is a name of the file's namespace, not a package's path: an
            # import may bind it under another name, ``import nets as N; eval('N.' + arch)``.)
            modules.add(dotted)
    if "import" in source or "sys.modules" in source:
        looks_up = fetches_a_member_by_name(source)
        path_parts = split_path_parts(source)
        for match in _MODULE_BY_NAME.finditer(source):
            if _of_a_split_path(source, match, path_parts):
                continue  # (``get_obj_from_str``: the class's name is spelled where its path is)
            # (Else what it builds from the module, it spells.)
            if not looks_up and not _returned(source, match):
                if (name := _bound_at_top_level(source, match)) is not None:
                    exported.add((name, _package_of(source, match)))
                continue
            package = _package_of(source, match)
            if package is None:
                return Reflection(f"`{match.group().rstrip('([ ').removeprefix('sys.modules.')}`", frozenset())
            packages.add(package)
    return Reflection(None, frozenset(modules), frozenset(packages), frozenset(exported), frozenset(registries))


#: Markers whose reach a class definition bounds: ``__init_subclass__`` runs for the
#: subclasses of the class that defines it, a metaclass for the class that declares it and
#: its subclasses. A registry they fill (s4's ``SequenceDataset.registry[cls._name_] =
#: cls``) may build those classes by a computed name, and no other.
_SCOPED_HINTS = frozenset({"__init_subclass__", "metaclass"})


def registering_classes(source: str, pattern: re.Pattern[str]) -> set[str] | None:
    """The top-level classes of ``source`` that define ``__init_subclass__`` or declare a
    metaclass, and the classes nested in them that do too, when every match of ``pattern``
    (the marker) lies in the definition of one of those top-level classes; else None: the marker elsewhere (a comment, a string, a nested class, a function)
    may reach any class. A source that does not parse: None."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans: dict[str, tuple[int, int]] = {}
    nested: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and _registers(node):
            spans[node.name] = (node.lineno, node.end_lineno or node.lineno)
            # (A class nested in it that holds a registry of its own: ``Outer.Inner``'s
            # subclasses, found by the last part of their bases' spelling, may be built too.)
            nested |= {inner.name for inner in ast.walk(node)
                       if isinstance(inner, ast.ClassDef) and inner is not node and _registers(inner)}
    for match in pattern.finditer(source):
        line = source.count("\n", 0, match.start()) + 1
        if not any(first <= line <= last for first, last in spans.values()):
            return None
    return set(spans) | nested


def _registers(node: ast.ClassDef) -> bool:
    """The class declares a metaclass (other than ``ABCMeta``) or defines ``__init_subclass__``."""
    return any(keyword.arg == "metaclass" and ast.unparse(keyword.value) not in ("ABCMeta", "abc.ABCMeta")
               for keyword in node.keywords) or any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init_subclass__"
        for item in node.body)


#: ``eval``/``exec`` of a dotted name built at run time from a template: ReChorus's
#: ``eval('{0}.{0}'.format(args.model_name))`` builds the class of that name in the
#: module of that name; HRNet's ``eval('models.' + cfg.MODEL.NAME + '.get_pose_net')``
#: one of ``models``; so do ``eval(cfg["model"] + "(cfg)")``, ``eval(name.upper() + "Net")``
#: and ``eval(".".join(parts))`` (not VAR's ``eval("\\n".join(lines))`` of a dict's text).
#: (A plain ``eval(m)`` reads a string the project spells: yolov7's model yamls name the
#: modules; unless the statement that last binds ``m`` binds it to a template.)
_TEMPLATE = (r"""\s*(?:[fF][rR]?(["'])[^"'\n]*\{|[rR]?(["'])[^"'\n]*\2\s*(?:\.format\(|%|\+)|(["'])\.\3\.join\("""
             r"""|[^\W\d][\w.]*(?:\[[^\]\n]*\]|\([^()\n]*\)|\.\w+)*\s*\+)""")
_EVAL_OF_A_TEMPLATE = re.compile(r"(?<![\w.])(?:eval|exec)\((?=" + _TEMPLATE + ")")
#: ``eval``'s whole argument an f-string of one name that begins with a word of its own and
#: holds no dot (``f'get_{src}_joint_names'``): the name of a function of the file's
#: namespace (or a builtin), not of another module's.
_OWN_NAME_TEMPLATE = re.compile(r"""\s*[fF](["'])[^\W\d]\w*(?:\{[^{}"'\n.]*\}\w*)+\1\s*\)""")
_EVAL_OF_AN_OWN_NAME = re.compile(r"(?<![\w.])eval\((?=" + _OWN_NAME_TEMPLATE.pattern + ")")
_TEMPLATE_AT = re.compile(_TEMPLATE)
#: ``eval``/``exec`` of a name: a template only where the statement above that last binds
#: the name binds it to one.
_EVAL_OF_A_NAME = re.compile(r"(?<![\w.])(?:eval|exec)\(\s*([^\W\d]\w*)\s*[,)]")
#: A module fetched by a name computed at run time: ``import_module(name)``,
#: ``__import__(name)``, ``sys.modules[name]`` or ``.get(name)`` (not the file's own,
#: ``sys.modules[__name__]``: its namespace, as ``globals()``).
_MODULE_BY_NAME = re.compile(
    r"\b(?:import_module|__import__)\(" + _NOT_A_STRING_ARGUMENT
    + r"|sys\.modules\s*(?:\[(?!\s*__name__\s*\])|\.(?:get|pop|setdefault)\()")
#: The literal package a computed module name starts with: ``"models." + name``,
#: ``f"models.{name}"``, ``"lib.config.%s.config" % name``, ``"models.{}".format(name)``,
#: ``f"models.resnet{depth}"`` (a name begun in ``models``);
#: or the whole name, a literal (``sys.modules["ltr"]``).
_PACKAGE_PREFIX = re.compile(
    r"""\s*[fFrRuU]{0,2}(["'])((?:[^\W\d]\w*\.)+)\w*(?:\1\s*\+|(?:\{[^}"'\n]*\}|%[sdr])[^"'\n]*\1)"""
    r"""|\s*(["'])([^\W\d][\w.]*)\3\s*[\]),]""")
#: ``if``/``or`` in a module name's expression: one of two names.
_PICKED = re.compile(r"\b(?:if|or)\b")
#: ``import_module("." + name, "pkg.models")``: a name relative to a literal package (each
#: dot past the first a level up: ``".." + name`` is one of ``pkg``'s); also a literal one
#: (``import_module(".losses", package="pkg")``).
_RELATIVE_TO_PACKAGE = re.compile(
    r"""\s*[fF]?(["'])(\.+)(?:\{[^}"'\n]*\}[^"'\n]*|[^\W\d][\w.]*)?\1"""
    # (the rest of the name's expression, up to the comma that ends it: one level of
    # brackets, ``"." + cfg.get("loss", "rank")``)
    r"""(?:[^,()\[\]{}\n]|\([^()\n]*\)|\[[^\[\]\n]*\])*,\s*(?:package\s*=\s*)?(["'])([^\W\d][\w.]*)\3""")
#: A member of something fetched by a computed name: ``getattr(module, name)`` (not of
#: ``self`` or ``cls``), ``module.__dict__``, ``vars(module)``, ``dir(module)``,
#: ``inspect.getmembers(module)``, ``operator.attrgetter(name)``, ``getattr`` itself passed
#: on (``functools.reduce(getattr, path.split("."), module)``). The receiver of a
#: ``getattr`` may span lines and hold calls two deep (black's ``getattr(\n
#: importlib.import_module(cfg.get("model")), name\n)``).
_MEMBER_BY_NAME = re.compile(
    r"\bgetattr\((?!\s*(?:self|cls)\s*,)(?:[^,()]|\((?:[^()]|\([^()]*\))*\))*," + _NOT_A_STRING_ARGUMENT
    + r"|\.__dict__\b|\bvars\(\s*[^\s)]|\bdir\(\s*[^\s)]|\bgetmembers\("
    + r"|\battrgetter\(" + _NOT_A_STRING_ARGUMENT + r"|(?<![\w.])getattr\s*[,)]")


def _package_of(source: str, match: re.Match, whole: bool = False) -> str | None:
    """The literal package of the module name a :data:`_MODULE_BY_NAME` (or
    :data:`_LITERAL_WITH_MORE`) match fetches, or
    None when nothing of it is spelled, or when a condition picks it (``"models." + name if
    short else name``: the literal starts one of the names only). ``__import__``'s is its top
    package (what it returns), unless ``whole``: the package whose module it imports."""
    if _PICKED.search(source, match.end(), _closing(source, match.end())):
        return None
    relative = _RELATIVE_TO_PACKAGE.match(source, match.end())
    if relative is not None and not match.group().startswith("sys"):
        parts = relative.group(4).split(".")
        up = len(relative.group(2)) - 1
        return ".".join(parts[:-up] if up else parts) or None  # (above the top package: spelled wrong)
    prefix = _PACKAGE_PREFIX.match(source, match.end())
    if prefix is None:
        return None
    package = (prefix.group(2) or prefix.group(4)).rstrip(".")
    # (``__import__("pkg.models." + name)`` returns ``pkg``, whose attributes reach it all)
    return package.split(".")[0] if match.group().startswith("__import__") and not whole else package


#: ``module, cls = string.rsplit(".", 1)``: a dotted path (``"ldm.models.autoencoder.VQModel"``,
#: a config's ``target``) split into its module and its member, the two names it binds.
_SPLIT_PATH = re.compile(
    r"""(?m)^[ \t]*\(?\s*([^\W\d]\w*)\s*,\s*([^\W\d]\w*)\s*\)?\s*=\s*[^\W\d][\w.]*"""
    r"""\.rsplit\(\s*(["'])\.\3\s*,\s*(?:maxsplit\s*=\s*)?1\s*\)\s*$""")
#: A ``def`` (or ``class``) statement: where a function's names end.
_NEW_FUNCTION = re.compile(r"(?m)^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]")
#: The first argument of a call, a bare name: ``import_module(module, package=None)``.
_BARE_NAME_ARGUMENT = re.compile(r"\s*([^\W\d]\w*)\s*[,)]")


def split_path_parts(source: str) -> tuple[frozenset[str], frozenset[str]]:
    """The names the file binds to the module part and to the member part of a dotted path
    it splits (:data:`_SPLIT_PATH`): latent-diffusion's ``get_obj_from_str``, which imports
    ``module`` and fetches ``cls`` from it."""
    if "rsplit(" not in source:
        return frozenset(), frozenset()
    matches = list(_SPLIT_PATH.finditer(source))
    return frozenset(match.group(1) for match in matches), frozenset(match.group(2) for match in matches)


def _of_a_split_path(source: str, match: re.Match, parts: tuple[frozenset[str], frozenset[str]]) -> bool:
    """Whether a module fetched by a computed name (a :data:`_MODULE_BY_NAME` match) is the
    module part of a dotted path split in the same function, and the file looks members up
    by a computed name by such a path's member part, and only by it, each in the function
    that splits the path (``getattr(import_module(module), cls)``):
    then both halves are the halves of one string, spelled where the path is (a config's
    ``target: ldm.modules.ema.LitEma``, a string in code), or built by a template that
    spells its package and its class (``"models." + arch + ".Net"``), as a word search
    sees them."""
    modules, members = parts
    argument = _BARE_NAME_ARGUMENT.match(source, match.end())
    if argument is None or argument.group(1) not in modules or match.group().startswith("sys"):
        return False
    # (The split that binds each name stands above its use in the same function: a loader
    # beside it, ``def load_module(module): return import_module(module)``, imports what
    # its callers pass, and ``def build(module, cls): return getattr(module, cls)`` fetches
    # what they name.)
    if not _split_above(source, match.start(), argument.group(1), 1):
        return False
    fetches_the_member = False
    for lookup in _MEMBER_BY_NAME.finditer(source):
        if not lookup.group().startswith("getattr("):
            return False
        name = _BARE_NAME_ARGUMENT.match(source, lookup.end())
        if name is None or name.group(1) not in members or not _split_above(source, lookup.start(), name.group(1), 2):
            return False
        fetches_the_member = True
    # (No member fetched: not a dotted path's halves but, say, a file's name and its
    # extension, ``module, ext = filename.rsplit(".", 1)``, a module of a folder imported.)
    return fetches_the_member


def _split_above(source: str, position: int, name: str, part: int) -> bool:
    """A split of a dotted path (:data:`_SPLIT_PATH`) binds ``name`` to its module part
    (``part`` 1) or member part (2) above ``position``, in the same function."""
    return any(split.group(part) == name and _NEW_FUNCTION.search(source, split.end(), position) is None
               for split in _SPLIT_PATH.finditer(source, 0, position))


def fetches_a_member_by_name(source: str) -> bool:
    """The file looks a member of something up by a computed name (:data:`_MEMBER_BY_NAME`)."""
    return _MEMBER_BY_NAME.search(source) is not None


#: ``.Net()``, ``(``, ``[``: a member of the fetched module, or a call or item of it, read
#: at once.
_USED_AT_START = re.compile(r"[ \t]*[.(\[]")
#: ``return importlib.import_module(``, ``lambda name: importlib.import_module(``: what a
#: line spells before a fetch it returns.
_RETURNS_AT_END = re.compile(r"(?:\breturn[ \t]+|\blambda\b[^:\n]*:[ \t]*)(?:[^\W\d]\w*[ \t]*\.[ \t]*)*$")
#: ``module = importlib.import_module(``: what a line spells before a fetch it binds to a name.
_BINDS_AT_END = re.compile(r"(?<![\w.])([^\W\d]\w*)[ \t]*=[ \t]*(?:[^\W\d]\w*[ \t]*\.[ \t]*)*$")


def _closing(source: str, start: int) -> int:
    """Where the bracket open before ``start`` closes (past it), its text's brackets
    counted (quoted ones too: a rough end is only a less certain answer)."""
    depth = 1
    for position in range(start, min(len(source), start + 1000)):
        depth += (source[position] in "([{") - (source[position] in ")]}")
        if not depth:
            return position + 1
    return len(source)


def _bound_at_top_level(source: str, match: re.Match) -> str | None:
    """The name a top-level statement binds to the module a :data:`_MODULE_BY_NAME` match
    fetches (``MODELS = importlib.import_module(sys.argv[1])``), or None."""
    if _USED_AT_START.match(source, _closing(source, match.end())):
        return None
    line_start = source.rfind("\n", 0, match.start()) + 1
    bound = _BINDS_AT_END.search(source, line_start, match.start())
    return bound.group(1) if bound is not None and bound.start() == line_start else None


def _returned(source: str, match: re.Match) -> bool:
    """Whether a function returns the module a :data:`_MODULE_BY_NAME` match fetches
    (``return importlib.import_module(name)``, a ``lambda``'s, or a name bound to it:
    ``module = ...`` then ``return module``): the file that calls it may look a member up
    by a computed name (``getattr(load(path), name)``), which the search of this file's
    text misses. Not ``return importlib.import_module(name).Net()``: a class its name
    spells."""
    if _USED_AT_START.match(source, _closing(source, match.end())):
        return False
    before = source[source.rfind("\n", 0, match.start()) + 1:match.start()]
    if _RETURNS_AT_END.search(before):
        return True
    bound = _BINDS_AT_END.search(before)
    return bound is not None and re.search(
        rf"\breturn\b[^\n#]*(?<![\w.]){re.escape(bound.group(1))}\b(?![ \t]*[.(\[])", source) is not None


#: Reflection that could import (or run) a module by a computed name or path, spelled
#: anywhere in the file (see :mod:`synclint.project.unimported_modules`): ``import_module``
#: or ``__import__`` of anything but a string, listing a package's modules, running a file
#: by path, looking an object up by a computed dotted path. Each with a piece of text that
#: it needs, as in :data:`_MARKERS`.
_MODULE_LOADERS = tuple((hint, re.compile(pattern)) for hint, pattern in (
    ("import_module(", r"import_module\(" + _NOT_A_STRING_ARGUMENT),
    ("__import__(", r"__import__\(" + _NOT_A_STRING_ARGUMENT),
    ("iter_modules", r"\biter_modules\b"),
    ("walk_packages", r"\bwalk_packages\b"),
    ("runpy", r"\brunpy\b"),
    ("spec_from_file_location", r"\bspec_from_file_location\b"),
    ("SourceFileLoader", r"\bSourceFileLoader\b"),
    ("load_source", r"\bload_source\("),
    ("execfile", r"\bexecfile\("),
    ("exec(", r"\bexec\(\s*(?:compile\(\s*)?open\("),
    # Configuration files written in Python, run by the path a command line gives:
    # ml_collections' ``config_flags.DEFINE_config_file``, mmcv's ``Config.fromfile``,
    # detectron2's ``LazyConfig.load``; and gin's, whose ``import pkg.losses`` lines run.
    ("DEFINE_config_file", r"\bDEFINE_config_file\b"),
    ("Config.fromfile(", r"\bConfig\.fromfile\("),
    ("LazyConfig", r"\bLazyConfig\b"),
    ("parse_config_file", r"\bparse_config_files?(?:_and_bindings)?\("),
    # A lookup of an object by a computed dotted path imports the module the path names:
    # ``pydoc.locate`` (and Hydra's, detectron2's, fvcore's ``locate``/``_locate``), Hydra's
    # ``get_class``/``get_method``/``get_object``, a ``_target_`` that is no literal
    # (``instantiate({"_target_": f"models.{arch}.Net"})``), ``importlib.util.find_spec``.
    ("locate(", r"(?<![^\W_])_?locate\(" + _NOT_A_STRING_ARGUMENT),
    ("get_", r"\bget_(?:class|method|object)\(" + _NOT_A_STRING_ARGUMENT),
    ("_target_", r"""\b_target_["']?\s*[:=]\s*(?!["'][^"'\n]*["']\s*[,})\n])"""),
    ("find_spec(", r"\bfind_spec\(" + _NOT_A_STRING_ARGUMENT),
))


#: ``__import__("pkg", fromlist=[name])``, ``import_module(".losses", package="pkg")``: a
#: literal name with more arguments, which may import a module of the package it names.
_LITERAL_WITH_MORE = re.compile(r"""\b(?:import_module|__import__)\((?=\s*(?:"[^"\n]*"|'[^'\n]*')\s*,)""")


def find_module_loading_in_packages(source: str) -> tuple[str | None, frozenset[str]]:
    """Reflection in the file's text that could import a module by a computed name or run a
    file by its path (``importlib.import_module(name)``, ``pkgutil.iter_modules``,
    ``runpy.run_path``, ``exec(open(path).read())``, a configuration file in Python run by
    its path: ``Config.fromfile(args.config)``): (the first one's marker, ()). But
    ``import_module``/``__import__`` of a name that starts with a literal package
    (``importlib.import_module("tasks." + name)``, relative to one: ``import_module("." +
    name, "pkg.models")``) can import only modules of that package, and so can a literal
    name given more arguments (``__import__("pkg", fromlist=[name])``,
    ``import_module(".losses", package="pkg")``): (None, those packages) when every loading
    is such; (None, ()) when there is none. Text, as :func:`find_reflection`: a comment or
    a string counts too."""
    packages: set[str] = set()
    loaders = [*_MODULE_LOADERS, ("(", _LITERAL_WITH_MORE)]
    path_parts = split_path_parts(source)
    for hint, pattern in loaders:
        if hint not in source:
            continue
        for match in pattern.finditer(source):
            if hint == "import_module(" and _of_a_split_path(source, match, path_parts):
                # (``get_obj_from_str``: a path spelled as a whole, or by a template that
                # begins with its package, in any file: see SplitPathTemplates)
                continue
            computed = hint in ("import_module(", "__import__(") or pattern is _LITERAL_WITH_MORE
            package = _package_of(source, match, whole=True) if computed else None
            if package is None:
                return f"`{match.group().rstrip('( ')}`", frozenset()
            # (``__import__``'s top package too, which it returns, as 62ef772 counted it: the
            # whole package, ``proj.pkg``, matches by its tails: unimported_modules._in_packages)
            packages.update({package, _package_of(source, match) or package})
    return None, frozenset(packages)


#: A template of a dotted name that begins with a literal package: ``f"ldm.modules.{name}"``,
#: ``"models." + arch``, ``"models.%s" % arch``, ``"models.{}".format(arch)``.
_DOTTED_TEMPLATE = re.compile(
    r"""(?<![\w])[fF]?(["'])((?:[^\W\d]\w*\.)+)[^\W\d]?\w*(?:\{|%[sdr])|(["'])((?:[^\W\d]\w*\.)+)\3\s*\+""")


def dotted_templates(source: str) -> set[str]:
    """The literal packages the file's templates of dotted names begin with: a path split
    into a module and a member (:func:`split_path_parts`) may be built by one, whose module
    is then one of that package's (a path spelled as a whole, a word search sees)."""
    if "." not in source:
        return set()
    return {(match.group(2) or match.group(4)).rstrip(".") for match in _DOTTED_TEMPLATE.finditer(source)}


class SplitPathTemplates:
    """What a project's templates of dotted names may build where a file of its program
    splits a path in two (``get_obj_from_str``, :func:`split_path_parts`): the path may be
    built in any file by a template that begins with a package (``"models." + arch``),
    whose modules, and what they hold, may then be loaded. Read each Python file once with
    :meth:`read`; :attr:`packages` is empty when no file of the program splits a path."""

    def __init__(self) -> None:
        self._templates: set[str] = set()
        self._splits = False

    def read(self, text: str, in_program: bool) -> None:
        """Take in one Python file's text; ``in_program``: the file is part of the program
        (not a test or an export tool), so a split there counts."""
        self._templates |= dotted_templates(text)
        if in_program and not self._splits:
            self._splits = bool(split_path_parts(text)[0])

    @property
    def packages(self) -> set[str]:
        return self._templates if self._splits else set()

