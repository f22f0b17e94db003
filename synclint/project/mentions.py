"""What one file's text says about which classes the project can build: the words it
spells, the classes it names outside their own definition, and reflection that could
build a class by a computed name.

A class nothing names cannot run (see :mod:`synclint.project.unnamed_classes`). The
evidence is text, not resolved references, so that it errs towards "named": a word
counts wherever it stands (code, a string, a comment, ``__all__``, a base of another
class, a function of the same name). Everything here depends on the file's content
only, so it lives in the file's cached summary.
"""

from __future__ import annotations

import ast
import bisect
import re

from synclint.project.scopes import dotted, walk_nodes

#: A word as Python reads a name (``[^\W\d]`` is a letter or an underscore, Unicode included).
WORD = re.compile(r"[^\W\d]\w*")

#: Text without one of these holds no reflection below, so its tree is not walked.
_REFLECTION_HINTS = ("__subclasses__", "__init_subclass__", "metaclass", "(type)", "globals(", "getattr(", "vars(",
                     "getmembers(", "__dict__", "import_module(", "__import__(", "sys.modules")
#: Metaclasses that register nothing: ``class Base(metaclass=ABCMeta)`` builds no class by name.
_PLAIN_METACLASSES = frozenset({"ABCMeta", "abc.ABCMeta", "type"})
#: Calls that list or fetch a module's members (``getattr`` only with a computed name).
_MEMBER_LOOKUPS = frozenset({"getattr", "vars", "getmembers", "inspect.getmembers"})


def words(source: str) -> frozenset[str]:
    """Every word of ``source``, wherever it stands."""
    return frozenset(WORD.findall(source))


def named_outside_themselves(source: str, classes: dict[str, tuple[int, int]]) -> frozenset[str]:
    """The names of ``classes`` (name -> first and last line of its definition) that the
    file spells outside that definition. Code inside a class runs only once the class
    does: ``super(APLoss, self).__init__()`` in ``APLoss`` names it for no one else."""
    if not classes:
        return frozenset()
    line_starts = [0, *(match.end() for match in re.finditer("\n", source))]
    found = set()
    for name, (first, last) in classes.items():
        for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", source):
            line = bisect.bisect_right(line_starts, match.start())
            if not first <= line <= last:
                found.add(name)
                break
    return frozenset(found)


def find_reflection(source: str, tree: ast.Module) -> tuple[str | None, frozenset[str]]:
    """Reflection in the file that could build a class by a computed name.

    Returns what rules unnamed classes out for the whole project (``__subclasses__``,
    ``__init_subclass__``, a registering metaclass, ``globals()``, a module loaded or
    looked up by a computed name), or None; and the dotted names whose members the file
    lists or fetches by a computed name (``getattr(models, cfg.arch)``, ``vars(losses)``):
    the index decides whether they are project modules. ``eval`` and ``exec`` are not
    counted: the strings they read name the classes in the project's own files
    (yolov7's ``eval(m)`` of its model yamls' module names).
    """
    if not any(hint in source for hint in _REFLECTION_HINTS):
        return None, frozenset()
    modules: set[str] = set()
    for node in walk_nodes(tree):
        if isinstance(node, ast.Attribute):
            if node.attr == "__subclasses__":
                return "`__subclasses__()`", frozenset()
            if node.attr == "__dict__" and (text := dotted(node.value)) is not None:
                modules.add(text)
            elif node.attr == "modules" and dotted(node.value) == "sys":
                return "`sys.modules`", frozenset()
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__init_subclass__":
            return "`__init_subclass__`", frozenset()
        elif isinstance(node, ast.ClassDef) and _registers_classes(node):
            return "a metaclass", frozenset()
        elif isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            if name == "globals":
                return "`globals()`", frozenset()
            if name.rsplit(".", 1)[-1] in ("import_module", "__import__") and not _literal(node.args[:1]):
                return f"`{name}` of a computed name", frozenset()
            if name in _MEMBER_LOOKUPS and node.args and (name != "getattr" or not _literal(node.args[1:2])):
                text = dotted(node.args[0])
                if text is not None:
                    modules.add(text)
    return None, frozenset(modules)


def _registers_classes(node: ast.ClassDef) -> bool:
    """A metaclass (``class Meta(type)``), or a class built by one that may register it."""
    if any(dotted(base) == "type" for base in node.bases):
        return True
    return any(
        keyword.arg == "metaclass" and dotted(keyword.value) not in _PLAIN_METACLASSES for keyword in node.keywords
    )


def _literal(args: list[ast.expr]) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)

