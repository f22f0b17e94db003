"""What one file's text says about which classes the project can build: the classes it
names (as words, and outside their own definition) and reflection that could build a
class by a computed name.

A class nothing names cannot run (see :mod:`synclint.project.unnamed_classes`). The
evidence is text, not resolved references, so that it errs towards "named": a word
counts wherever code or a string may refer to it (code, a string, ``__all__``, a base of
another class), but not in a comment, nor as a bare name in a file that defines the same
name itself (see :func:`named_words`). The index searches a project's files only when
some class could be unnamed (few projects have one), so no file's summary pays for it.

The text helpers at the end (a file's Python text, lines blanked out, words searched for
in any file) serve both questions asked of text: which classes nothing names
(:mod:`synclint.project.unnamed_classes`) and which modules nothing imports
(:mod:`synclint.project.unimported_modules`).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from synclint.sources import python_text, read_source

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
_OWN_NAMESPACE = re.compile(r"\b(?:locals|vars)\(\s*\)|\bFire\(\s*(?:\)|[^\W\d]\w*\s*=(?!=))")
_STAR_IMPORT = re.compile(r"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\*", re.MULTILINE)
#: ``globals()[key] = value``, ``globals().update(table)``: a file that fills its own
#: namespace by computed names may put any file's classes there, as a star import does.
_FILLS_GLOBALS = re.compile(
    r"globals\(\s*\)\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault|__setitem__)\()"
    # (the same namespace as the module object: ``setattr(sys.modules[__name__], name, value)``)
    r"|setattr\(\s*sys\.modules\[\s*__name__\s*\]\s*," + _NOT_A_STRING_ARGUMENT
    + r"|sys\.modules\[\s*__name__\s*\]\.__dict__\s*(?:\[[^\]\n]*\]\s*=(?!=)|\.(?:update|setdefault)\()")
_DOTTED_AT_END = re.compile(r"(?<![\w.])[^\W\d][\w.]*$")


def _words(source: str, names: Iterable[str]) -> Iterator[tuple[str, int, int]]:
    """Each spelling of one of ``names`` in ``source`` as a word (as Python reads a name: no
    letter, digit or underscore before or after; Unicode letters included; digits that
    begin no word do not count: ``2Loss`` spells ``Loss``): the name, where it starts, and
    where the run of word characters before it starts (the same place unless digits)."""
    names = sorted(names, key=len, reverse=True)  # (the longest first: ``Loss`` must not end at ``LossV2``)
    if not names:
        return
    # The start of a word is checked by hand: a pattern that begins with a look-behind
    # tries every position of the text, one that begins with the names scans for their
    # first letters (8x faster on a project's files).
    pattern = re.compile(rf"(?:{'|'.join(map(re.escape, names))})(?!\w)")
    for match in pattern.finditer(source):
        start = before = match.start()
        while before and (source[before - 1].isalnum() or source[before - 1] == "_"):  # (``\w``)
            before -= 1
        if before < start and not source[before:start].isdecimal():
            continue  # the end of a longer word
        yield match.group(), start, before


def spelled_names(
    source: str, names: Iterable[str], defined: dict[str, tuple[int, int]]
) -> tuple[frozenset[str], frozenset[str]]:
    """Of ``names``: those that ``source`` spells as words (as Python reads a name: no
    letter, digit or underscore before or after; Unicode letters included), and those of
    ``defined`` (name -> first and last line of the file's definition of it) that it spells
    outside that definition, with no digit before them either. Code inside a class runs
    only once the class does: ``super(APLoss, self).__init__()`` in ``APLoss`` names it for
    no one else. One search for all of them."""
    line_starts: list[int] = []
    spelled: set[str] = set()
    outside: set[str] = set()
    for name, start, before in _words(source, names):
        spelled.add(name)
        if name in defined and name not in outside and before == start:
            if not line_starts:
                line_starts = [0, *(newline.end() for newline in re.finditer("\n", source))]
            first, last = defined[name]
            if not first <= bisect.bisect_right(line_starts, start) <= last:
                outside.add(name)
    return frozenset(spelled), frozenset(outside)


def named_words(
    source: str, names: Iterable[str], defined: dict[str, tuple[int, int]], shadowed: Iterable[str] = (),
    modules: Iterable[str] | None = None,
) -> tuple[frozenset[str], frozenset[str]]:
    """:func:`spelled_names` for references: of ``names``, those the text may name when
    another file defines them, and those of ``defined`` (this file's definitions, name ->
    first and last line) it names outside their definition. Unlike a spelling:

    * a comment names nothing (``# metrics = validate(model, loader)``: a call commented
      out runs nothing);
    * a file that defines a name at top level itself and does not import it
      (``shadowed``) means its own by the bare name: a copy of a module (Point-MAE's
      ``segmentation/models/pointnet2_utils.py`` beside ``segmentation/pointnet_util.py``,
      each with a ``PointNetSetAbstraction``) or a runner with its own ``validate`` names
      the other file's only as an attribute (``pointnet_util.PointNetSetAbstraction``, also
      in the header of its own class) or in a string;
    * its own definitions it names by the bare name or in a string, never as an attribute
      (``model.eval()`` is no call of the file's function ``eval``);
    * with ``modules`` (the names the file's imports bind), another file's definition it
      names as an attribute only of one of them (``losses.APLoss``, ``pkg.losses.APLoss``)
      or of a call's or subscript's result (``import_module(name).APLoss``): ``model.eval()``
      calls no module's ``eval``.

    A string counts wherever it stands (a registry key, ``getattr(module, "Net")``); a
    ``#`` that seems to start a comment read from its line's start is one only where Python's
    tokenizer says so (a line of a multi-line string may hold one: an f-string's
    ``# Results: {evaluate(model)}``)."""
    names = set(names)
    if not names:
        return frozenset(), frozenset()
    shadowed = set(shadowed)
    modules = None if modules is None else _module_aliases(source, set(modules))
    line_starts: list[int] = []
    spelled: set[str] = set()
    outside: set[str] = set()
    scan = [-1, 0, ""]  # (how far the last mention's line was read: see :func:`_mention_kind`)
    comments: list[tuple[int, int]] | None = None
    has_long_strings = '"""' in source or "'''" in source
    for name, start, before in _words(source, names):
        if name in spelled and (name not in defined or name in outside):
            continue
        if not line_starts:
            line_starts = [0, *(newline.end() for newline in re.finditer("\n", source))]
        line = bisect.bisect_right(line_starts, start)
        # (A line may end at a lone ``\r`` too, as Python reads one.)
        line_start = source.rfind("\r", line_starts[line - 1], before) + 1 or line_starts[line - 1]
        kind, dot = _mention_kind(source, line_start, before, scan)
        if kind == "string" or (kind != "comment" and has_long_strings):
            # A string that is a statement of its own (a docstring, code "commented out"
            # in triple quotes: GraphCL's only call of ``eval_loss``) runs nothing either.
            if comments is None:
                comments = _comment_spans(source, line_starts)
            if comments != [(-1, -1)] and _within(comments, before):
                continue
        if kind == "comment":
            # (Read from the line's start, a line of a multi-line string may seem to hold a
            # comment: ``f"""\n# Results: {evaluate(model)}\n"""``. The tokenizer says.)
            if comments is None:
                comments = _comment_spans(source, line_starts)
            if comments == [(-1, -1)] or _within(comments, before):
                continue
            kind, dot = "string", -1
        if kind == "attribute" and modules is not None and not _of_a_module(source, dot, modules):
            pass  # (``model.eval``: an object's attribute, no module's)
        elif name not in shadowed or kind != "bare":
            spelled.add(name)
        if name in defined and kind != "attribute" and before == start:
            first, last = defined[name]
            if not first <= line <= last:
                outside.add(name)
    return frozenset(spelled), frozenset(outside)


#: ``name = importlib.import_module("pkg.losses")``, ``mod = losses``, ``self.heads = heads``:
#: a name (or an attribute) bound to a module, whose attributes are the module's.
_ASSIGNED = re.compile(r"^[ \t]*([^\W\d][\w.]*)[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*([^\n]*)", re.MULTILINE)
_LOADS_A_MODULE = re.compile(r"(?:\bimport_module|\b__import__|\breload)\(")


def _module_aliases(source: str, modules: set[str]) -> set[str]:
    """``modules`` with the names (or dotted attributes) the text binds to a module: a
    module imported by ``import_module`` or ``__import__``, or one of ``modules``."""
    if "=" not in source:
        return modules
    assigned = [(target, value.split("#", 1)[0].strip()) for target, value in _ASSIGNED.findall(source)]
    found = set(modules)
    while True:
        more = {target for target, value in assigned if target not in found and (
            _LOADS_A_MODULE.search(value) or (_DOTTED.fullmatch(value) and _starts_at(value, found)))}
        if not more:
            return found
        found |= more


_DOTTED = re.compile(r"[^\W\d][\w.]*")


def _starts_at(chain: str, modules: set[str]) -> bool:
    """``chain`` (``a.b.c``) is one of ``modules`` (names or dotted) or an attribute of one."""
    return chain.split(".", 1)[0] in modules or any(chain == module or chain.startswith(module + ".")
                                                    for module in modules if "." in module)


def _comment_spans(source: str, line_starts: list[int]) -> list[tuple[int, int]]:
    """(start, end) offsets, in order, of what in ``source`` runs nothing, as Python's
    tokenizer reads it: its comments, and the strings that are statements of their own
    (docstrings, code put in triple quotes); ``[(-1, -1)]`` when it cannot (a syntax it does
    not know: then a ``#`` outside quotes on the line is taken as a comment)."""
    import io
    import tokenize

    spans = []
    # The strings of the logical line so far, while nothing else is on it: such a line
    # is a statement of strings (implicitly joined) when it ends.
    statement: list[tuple[int, int]] | None = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            # (Only a comment's or a string's own place: the end marker of a file whose
            # last line has no newline sits on a line past its last.)
            if token.type == tokenize.COMMENT:
                spans.append(_span(token, line_starts))
            elif token.type == tokenize.STRING and "f" not in _prefix(token.string):
                if statement is not None:
                    statement.append(_span(token, line_starts))
            elif token.type == tokenize.NEWLINE:
                spans.extend(statement or ())
                statement = []
            elif token.type in (tokenize.INDENT, tokenize.DEDENT):
                statement = [] if statement == [] else statement
            elif token.type != tokenize.NL:
                statement = None
    except (tokenize.TokenError, SyntaxError, ValueError, IndexError):
        return [(-1, -1)]
    return sorted(spans)


def _span(token, line_starts: list[int]) -> tuple[int, int]:
    """A token's (start, end) offsets in the source."""
    (row, column), (end_row, end_column) = token.start, token.end
    return line_starts[row - 1] + column, line_starts[end_row - 1] + end_column


def _prefix(string: str) -> str:
    """The prefix of a string literal, lower-cased: an ``f`` runs the code in its braces
    (``f"{evaluate(model)}"`` as a statement calls it; before Python 3.12 the tokenizer
    reads an f-string as one STRING, after it as FSTRING_START... tokens)."""
    return string[: min(i for i in (string.find("'"), string.find('"')) if i >= 0)].lower()


def _within(spans: list[tuple[int, int]], position: int) -> bool:
    index = bisect.bisect_right(spans, (position, 1 << 62)) - 1
    return index >= 0 and spans[index][0] <= position < spans[index][1]


def _of_a_module(source: str, dot: int, modules: set[str]) -> bool:
    """Whether the dotted chain that ends at ``source[dot]`` (a ``.``) starts at one of
    ``modules``, or at a call's or subscript's result (``import_module(name).losses.APLoss``).
    The chain may break its line before the dot (``(losses\n .APLoss)``)."""
    end = dot
    while end and source[end - 1] in " \t\r\n\\":
        end -= 1
    start = end
    while start and (source[start - 1].isalnum() or source[start - 1] in "_."):
        start -= 1
    chain = source[start:end]
    if not chain or chain.startswith("."):
        return start > 0 and source[start - 1] in ")]"
    return _starts_at(chain, modules)


def _mention_kind(source: str, line_start: int, position: int, scan: list | None = None) -> tuple[str, int]:
    """How the word at ``position`` stands on its line: "comment", "string", "attribute"
    (after a dot, spaces allowed: ``losses. APLoss``) or "bare"; with the position of the
    dot of an attribute. Quotes are followed from the start of the line only. ``scan``
    (line start, position, open quote or ``#``), updated: how far an earlier call read the
    same line, from where a later position on it is read on (a line of many mentions is
    read once)."""
    quote = ""
    index = line_start
    if scan is not None and scan[0] == line_start and scan[1] <= position:
        index, quote = scan[1], scan[2]
    while index < position and quote != "#":
        char = source[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            quote = "#"
            break
        index += 1
    if scan is not None:
        scan[:] = [line_start, index, quote]
    if quote == "#":
        return "comment", -1
    if quote:
        return "string", -1
    dot = position - 1
    while dot > line_start and source[dot] in " \t":
        dot -= 1
    return ("attribute", dot) if dot >= line_start and source[dot] == "." else ("bare", -1)


def has_star_import(source: str) -> bool:
    """``from pkg import *`` somewhere in ``source``: it binds names the file never spells."""
    return "import" in source and _STAR_IMPORT.search(source) is not None


def _uses_own_globals(source: str) -> bool:
    return ("globals(" in source or "sys.modules" in source) and _OWN_GLOBALS.search(source) is not None


def builds_its_own_classes(source: str) -> bool:
    """The file could build a class of its own by a computed name: ``globals()[name]``
    (CenterNet's ``globals()[base_name](pretrained=...)`` picks one of the backbones the
    file defines), ``locals()`` or ``vars()`` (at top level, the same namespace), or
    ``fire.Fire()`` with no component (every function of the file is a command). What else
    its namespace holds it imports by name, spelling each."""
    return _uses_own_globals(source) or (
        ("locals(" in source or "vars(" in source or "Fire(" in source) and _OWN_NAMESPACE.search(source) is not None)


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
    for hint, pattern in _MARKERS:
        if hint in source and (marker := pattern.search(source)) is not None:
            return Reflection("`sys.modules`" if hint == "sys.modules" else f"`{marker.group().rstrip('( =')}`",
                              frozenset())
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
            if binding is not None and re.compile(_TEMPLATE).match(source, binding.end()) is not None:
                end = source.find("\n", binding.end())
                templates.append((binding.end(), len(source) if end < 0 else end, match.group().partition("(")[0]))
        for start, end, call in templates:
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
        for match in _MODULE_BY_NAME.finditer(source):
            # (Else what it builds from the module, it spells.)
            if not looks_up and not _returned(source, match):
                if (name := _bound_at_top_level(source, match)) is not None:
                    exported.add((name, _package_of(source, match)))
                continue
            package = _package_of(source, match)
            if package is None:
                return Reflection(f"`{match.group().rstrip('([ ').removeprefix('sys.modules.')}`", frozenset())
            packages.add(package)
    return Reflection(None, frozenset(modules), frozenset(packages), frozenset(exported))


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
#: dot past the first a level up: ``".." + name`` is one of ``pkg``'s).
_RELATIVE_TO_PACKAGE = re.compile(
    r"""\s*[fF]?(["'])(\.+)(?:\{[^}"'\n]*\}[^"'\n]*)?\1[^,\n]*,\s*(?:package\s*=\s*)?(["'])([^\W\d][\w.]*)\3""")
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


def _package_of(source: str, match: re.Match) -> str | None:
    """The literal package of the module name a :data:`_MODULE_BY_NAME` match fetches, or
    None when nothing of it is spelled, or when a condition picks it (``"models." + name if
    short else name``: the literal starts one of the names only)."""
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
    return package.split(".")[0] if match.group().startswith("__import__") else package


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


def find_module_loading(source: str) -> str | None:
    """Reflection in the file's text that could import a module by a computed name or run a
    file by its path (``importlib.import_module(f"models.{name}")``, ``pkgutil.iter_modules``,
    ``runpy.run_path``, ``exec(open(path).read())``, a configuration file in Python run by
    its path: ``Config.fromfile(args.config)``), or None. Text, as
    :func:`find_reflection`: a comment or a string counts too."""
    for hint, pattern in _MODULE_LOADERS:
        if hint in source and (marker := pattern.search(source)) is not None:
            return f"`{marker.group().rstrip('( ')}`"
    return None


#: How much of a text file is searched at a time (big JSON files are read in pieces).
_CHUNK = 1 << 20
#: The bytes of an ASCII word (a name is compared as bytes: see :func:`_spelled_in_file`).
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def blanked(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with the lines of ``spans`` (first, last: from 1) emptied, line numbers kept."""
    lines = text.split("\n")
    for first, last in spans:
        for number in range(first - 1, min(last, len(lines))):
            lines[number] = ""
    return "\n".join(lines)


def python_text_of(path: str) -> str | None:
    try:
        return python_text(read_source(path))
    except OSError:
        return None


def spelled_in(paths: Iterable[str], names: set[str]) -> set[str]:
    """Those of ``names`` that some file of ``paths`` spells as a word. A file that
    cannot be read may spell any of them."""
    left = set(names)
    found: set[str] = set()
    for path in paths:
        if not left:
            break
        spelled = _spelled_in_file(path, left)
        found |= spelled
        left -= spelled
    return found


def _spelled_in_file(path: str, names: set[str]) -> set[str]:
    """Those of ``names`` that the file spells as a word, read in pieces that overlap by
    the longest name. Bytes, not text: a byte of a multi-byte character next to a name
    ends the word, so the answer errs towards "spelled"."""
    left = {name.encode("utf-8"): name for name in names}
    overlap = max(map(len, left))
    found: set[str] = set()
    try:
        with open(path, "rb") as handle:
            tail = b""
            while left and (chunk := handle.read(_CHUNK)):
                text = tail + chunk
                for encoded in [encoded for encoded in left if _spelled_as_word(text, encoded)]:
                    found.add(left.pop(encoded))
                tail = text[-overlap:]
    except OSError:
        return set(names)
    return found


def _spelled_as_word(text: bytes, name: bytes) -> bool:
    """``name`` stands in ``text`` with no letter, digit or underscore on either side (a
    substring search first: a notebook of embedded images is megabytes of base64)."""
    start = text.find(name)
    while start >= 0:
        end = start + len(name)
        if (start == 0 or text[start - 1] not in _WORD_BYTES) and (end == len(text) or text[end] not in _WORD_BYTES):
            return True
        start = text.find(name, start + 1)
    return False
