"""What one file's text says about which classes the project names: as words, and
outside their own definition (reflection that could build a class by a computed name is
:mod:`synclint.project.reflection`'s).

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

import ast
import bisect
import io
import re
import tokenize
from collections.abc import Iterable, Iterator

from synclint.sources import python_text, read_source


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
    tokenizer reads it: its comments, the strings that are statements of their own
    (docstrings, code put in triple quotes), and the strings of a ``raise`` statement (its
    message: s4's ``raise RuntimeError('Lamb does not support sparse gradients.')`` in
    ``JITLamb`` builds no ``Lamb``); ``[(-1, -1)]`` when it cannot (a syntax it does not
    know: then a ``#`` outside quotes on the line is taken as a comment)."""
    import io
    import tokenize

    spans = []
    # The strings of the logical line so far, while nothing else is on it: such a line
    # is a statement of strings (implicitly joined) when it ends.
    statement: list[tuple[int, int]] | None = []
    # The strings of the logical line so far, when it is a ``raise`` statement (None otherwise).
    raising: list[tuple[int, int]] | None = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            # (Only a comment's or a string's own place: the end marker of a file whose
            # last line has no newline sits on a line past its last.)
            if token.type == tokenize.COMMENT:
                spans.append(_span(token, line_starts))
            elif token.type == tokenize.STRING and "f" not in _prefix(token.string):
                if statement is not None:
                    statement.append(_span(token, line_starts))
                elif raising is not None:
                    raising.append(_span(token, line_starts))
            elif token.type == tokenize.NEWLINE:
                spans.extend(statement or raising or ())
                statement, raising = [], None
            elif token.type in (tokenize.INDENT, tokenize.DEDENT):
                statement = [] if statement == [] else statement
            elif token.type != tokenize.NL:
                if statement == [] and token.type == tokenize.NAME and token.string == "raise":
                    raising = []
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


def spelled_in(paths: Iterable[str], names: set[str], code_in_markdown: bool = False) -> set[str]:
    """Those of ``names`` that some file of ``paths`` spells as a word. A file that
    cannot be read may spell any of them. ``code_in_markdown``: a Markdown page spells only
    in its code (fenced or indented blocks, inline code spans), not in its prose: a program's
    page that tells users to build a class shows how (``loss = APLoss()``, ``--loss
    APLoss``, `` `APLoss` ``), while prose names what the code came from ("the
    [AlphaFold](...)" model, whose vendored ``AlphaFold`` class nothing builds). (Callers
    ask it of projects nobody installs: a library's prose documents its API.)"""
    left = set(names)
    found: set[str] = set()
    for path in paths:
        if not left:
            break
        if code_in_markdown and path.endswith(".md"):
            spelled = _spelled_in_markdown_code(path, left)
        else:
            spelled = _spelled_in_file(path, left)
        found |= spelled
        left -= spelled
    return found


#: A fenced code block of Markdown (``` or ~~~, to the same fence or the end of the page).
_FENCED = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]{0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
#: An indented code line (four spaces or a tab), or an inline code span.
_INDENTED = re.compile(r"^(?: {4}|\t)[^\n]*$", re.MULTILINE)
_CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.DOTALL)


def _spelled_in_markdown_code(path: str, names: set[str]) -> set[str]:
    """Those of ``names`` that the code of a Markdown page spells as a word."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return set(names)
    fenced = [match.group() for match in _FENCED.finditer(text)]
    prose = _FENCED.sub("\n", text)
    code = "\n".join([*fenced, *_INDENTED.findall(prose), *(match.group(2) for match in _CODE_SPAN.finditer(prose))])
    encoded = code.encode("utf-8")
    return {name for name in names if _spelled_as_word(encoded, name.encode("utf-8"))}


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


def strings_and_comments(text: str) -> str:
    """The string literals and comments of a module's source (a ``# Usage: python -m
    pkg.tool`` documents how it runs as a docstring does), one per line (all of it when it
    does not parse)."""
    try:
        tree = ast.parse(text)
        comments = [token.string for token in tokenize.generate_tokens(io.StringIO(text).readline)
                    if token.type == tokenize.COMMENT]
    except (SyntaxError, ValueError, RecursionError, MemoryError, tokenize.TokenError):
        return text
    strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
    return "\n".join([*strings, *comments])
