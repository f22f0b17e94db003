"""Command-line flags that no one passes, and the blocks their tests close.

Conditional-DETR's ``main.py`` declares ``parser.add_argument('--masks',
action='store_true')`` and hands ``args = parser.parse_args()`` to ``build(args)``,
which builds the segmentation head and its post-processors only ``if args.masks:``.
No README, shell script or configuration of the project passes ``--masks``: the flag
keeps its default, ``False``, and the block never runs (nor do the classes built only
there: :mod:`synclint.project.unnamed_classes`). DETR's own README tells its users to
pass ``--masks``: there the block runs.

A flag is *constant* (its default) when all of these hold:

* **Its default is a constant.** Every ``add_argument`` of its destination (``dest=``,
  else the first long option: ``--no-aux`` is ``no_aux``) is a switch,
  ``action="store_true"``/``"store_false"`` with no ``default=`` (``False``/``True``)
  or a constant one, or an option taking one value with a constant ``default=`` (none:
  ``None``): ``if args.loss == "focal":`` never runs where ``--loss`` keeps ``"ce"``. Not
  a required option (or one whose ``required=`` is computed: every run may pass it), one
  taking several values (``nargs``), another action (``append``, ``count``), nor a string
  default that ``type=`` converts (``type=float, default="0.1"``): its value cannot be told.
* **Nothing passes it.** No option-like word of the project's text is one of its
  option strings or an abbreviation argparse would accept for one (``--mask`` for
  ``--masks``): not a string of Python code (``subprocess.run([..., "--masks"])``,
  ``parse_args(["--masks"])``, ``sys.argv.append("--masks")``; the option strings of
  ``add_argument`` itself aside) nor a comment of one (a usage line: ``# python
  main.py --masks``), nor a file that may run the program or tell users how to
  (:data:`~synclint.project.layout.NAMING_SUFFIXES`: README, shell scripts,
  configuration files, notebooks). A single-dash option is passed when any
  single-dash word holds its letter (``-vm`` sets ``-m``). It may also hold a string
  value its tests select (``if args.hier == "bottom":``) that a document, script or
  configuration names as a word: vq-vae-2's README tells of its "top/bottom
  hierarchical prior", whose bottom half ``--hier bottom`` trains, though no text shows
  the option (:func:`synclint.project.step_branches.values_named_in_documents`).
* **Nothing stores it.** No attribute of its name is stored anywhere in the project
  (``args.masks = True``, ``setattr(args, "masks", True)``, see
  :mod:`synclint.project.constant_attributes`), nor set by keyword
  (``parser.set_defaults(masks=True)``, ``Namespace(masks=True)``), nor spelled by a
  notebook, whose cells the index never reads. Nor is its name given a value where a
  namespace passed under the same parameter name may be built from it: a key of a
  configuration file (``masks: true`` in a YAML or JSON file read by ``args =
  EasyDict(yaml.safe_load(f))``), or a constant given it by name in any Python file:
  a keyword (``EasyDict(masks=True)``), a dict key (``{"masks": True}``) or an
  assignment at the top of a module or class (a Python configuration file's ``masks =
  True``, loaded by ``Config.fromfile``; not a function's local, unless a keyword or a
  dict key hands it on: ``masks = True; return EasyDict(masks=masks)``):
  :func:`given_a_constant_in`, asked only of the flags left. A computed value
  (``{"masks": self.loss_masks}``, ``make(masks=args.masks)``) sets nothing new.
* **Nothing could store it by a computed name.** No program file stores attributes
  by a computed name (``setattr(args, k, v)`` merging a config, as DN-DETR does),
  passes options or sets defaults by one (``set_defaults(**cfg)``,
  ``Namespace(**cfg)``, ``f"--{name}"``, ``"--%s" % name``, an ``add_argument`` of a
  computed option), nor passes options that no text shows: parses into a namespace
  it was handed (``parse_args(namespace=cfg)`` keeps what ``cfg`` holds), lets a
  parser read them from files or the environment (``fromfile_prefix_chars``:
  ``@segm.txt``; jsonargparse's ``default_env=True``, ``default_config_files``,
  ``action=ActionConfigFile``), or adds
  computed words to ``sys.argv`` (``sys.argv += shlex.split(os.environ["ARGS"])``).
* **The project is whole**: a piece of a split project, or a source on its own, does
  not show what the rest passes.

A test closes a block when it reads the flag on a receiver bound from
``parse_args(...)``/``parse_known_args(...)[0]`` (in the function, or at the top of its
module) or on a parameter of the same name as such a receiver anywhere in the project
(``def build(args):``; a module's name that a function of it declares ``global`` and
binds otherwise, ``global args; args = Config(path)``, is not), or on an attribute of
``self`` of that name: CenterNet's losses keep the options they are handed (``self.opt =
opt``) and read ``if opt.eval_oracle_wh:`` after ``opt = self.opt`` (a name a method
binds only so), or ``self.opt.eval_oracle_wh``.
``self.masks`` or ``outputs.masks`` are other objects' attributes. A name its file also
rebuilds from itself (``args = merge(args, cfg)``) is no such receiver: the parameter may
get the merged object, which holds what the configuration does; a function of the file
that returns the very parameter it stores attributes on hands back the same object
(CenterNet's ``opt = self.update_dataset_info_and_set_heads(opt, dataset)``).
Attributes stored by a computed name on ``self`` (``setattr(self, name, layer)``) are a
module's or another instance's, never a parsed namespace's: only such stores on other
objects (``setattr(args, k, v)``) open every flag.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from synclint.project.rare_blocks import constant_value
from synclint.project.scopes import function_nodes, names_bound_by, own_nodes

#: What an ``add_argument`` says of its destination's default: ``(value,)``, or ``()``
#: when it cannot be told (a computed default, a required option, several values: see
#: :func:`_default`).
Default = tuple[()] | tuple[object]

#: Calls that set attributes of a namespace by keyword: ``parser.set_defaults(masks=True)``.
_KEYWORD_SETTERS = frozenset({"set_defaults", "Namespace", "SimpleNamespace"})
_PARSE_CALLS = frozenset({"parse_args", "parse_known_args", "parse_intermixed_args", "parse_known_intermixed_args"})
_SWITCH_DEFAULTS = {"store_true": False, "store_false": True}
#: An option-like word: ``--masks``, ``-m`` (not the ``-1`` of a number, not ``a-b``).
#: (The dash comes first, the look behind it after: a scan for a literal is fast.)
OPTION_WORD = re.compile(r"-(?<![\w-]-)-?[A-Za-z][\w-]*")
_OPTION_BYTES = re.compile(OPTION_WORD.pattern.encode())
#: An option named by a format: ``"--{}".format(name)``, ``"--%s" % name``.
_FORMATTED_OPTION = re.compile(r"(?<![\w-])-{1,2}(\{|%[sr(])")
#: How much of a file is searched at a time, and how far pieces overlap (an option's length).
_CHUNK = 1 << 20
_OVERLAP = 256


@dataclass(frozen=True)
class FlagDeclaration:
    """One ``add_argument`` of an option: its destination, option strings and default."""

    dest: str
    options: tuple[str, ...]
    default: Default


@dataclass(frozen=True)
class CommandLine:
    """What one file says about command-line flags (a part of its summary)."""

    declared: tuple[FlagDeclaration, ...] = ()
    #: Names bound from ``parse_args(...)`` somewhere in the file, and never rebuilt from
    #: themselves (``args = merge(args, cfg)``: a parameter of that name may get the merged
    #: object, which holds what the configuration does).
    parsed_names: frozenset[str] = frozenset()
    #: Option-like words of its string constants (``add_argument``'s option strings aside).
    options_spelled: frozenset[str] = frozenset()
    #: Destinations set by keyword: ``set_defaults(masks=True)``, ``Namespace(masks=True)``.
    set_by_keyword: frozenset[str] = frozenset()
    #: It sets defaults, namespaces or options by a computed name (``set_defaults(**cfg)``,
    #: ``f"--{name}"``, ``add_argument(f"--{name}")``) or passes options no text shows
    #: (``parse_args(namespace=cfg)``, ``fromfile_prefix_chars``, jsonargparse's ``default_env``,
    #: ``sys.argv += words``):
    #: any flag may be passed or set.
    by_computed_name: bool = False
    #: Its functions that return the result of ``parse_args`` (see :func:`parse_wrappers`).
    parse_wrappers: frozenset[str] = frozenset()


NO_COMMAND_LINE = CommandLine()
#: Words of the calls and names a file that declares, parses, sets or builds options
#: holds (most files hold none of them, and need no walk).
_HINT_WORDS = ("add_argument", "parse_args", "parse_known", "parse_intermixed", "set_defaults", "Namespace", "argv",
               "fromfile_prefix", "default_config_files", "default_env", "ActionConfigFile")
#: Or text that may be an option in a string or comment: right after a quote
#: (``"--masks"``, ``'-m'``; not the number ``"-inf"``), a long option after a space
#: (``"python main.py --masks"``, ``# usage: ... --masks``), dashes before a format or
#: a quote (``f"--{name}"``, ``"--%s"``, ``"--" + name``, ``" -" + name``). A single dash
#: after a space is mostly arithmetic (``-bound``): such a file's option words are those
#: of its whole text, found without a walk (see :func:`command_line`). (Each branch
#: starts at the dash: a scan for a literal is fast.)
_HINT = re.compile(r"""-(?:(?<=["']-)-?(?!(?:inf|nan)["'])[A-Za-z{%"']|(?<=\s-)(?:-?[{%"']|-[A-Za-z]))""")
#: A comment (and, rarely, the rest of a line after a ``#`` in a string: more words, which
#: only ever keep a flag open).
_COMMENT = re.compile(r"#[^\n]*")
#: Keywords of an ``ArgumentParser`` that read options from files or the environment.
_READERS_OF_OPTIONS = frozenset({"fromfile_prefix_chars", "default_config_files", "default_env", "argument_default"})
#: jsonargparse's action of an option naming a configuration file, whose keys set any flag.
_CONFIG_FILE_ACTION = "ActionConfigFile"
#: Methods of a list that add words to it (``sys.argv.extend(extra)``).
_LIST_ADDERS = frozenset({"append", "extend", "insert", "__iadd__"})


def command_line(source: str, tree: ast.Module) -> CommandLine:
    """What ``tree`` (of ``source``) declares, parses, passes and sets (one walk). A file
    with no :data:`_HINT` declares, parses, sets and builds nothing: its option words are
    every option-like word of its text (a superset of its strings' and comments': more
    words only ever keep a flag open), found by one scan."""
    if not any(word in source for word in _HINT_WORDS) and not _HINT.search(source):
        words = OPTION_WORD.findall(source)
        return CommandLine(options_spelled=frozenset(words)) if words else NO_COMMAND_LINE
    declared: list[FlagDeclaration] = []
    parsed: set[str] = set()
    spelled: set[str] = set()
    keywords: set[str] = set()
    computed = False
    declaring: set[int] = set()  # add_argument's own option strings, by identity
    assigned: list[tuple[str, ast.AST]] = []  # (name, value) of other assignments of a name
    wrappers = parse_wrappers(tree) if "parse_" in source else frozenset()
    for node in ast.walk(tree):
        kind = type(node)
        if kind is ast.Call:
            name = _called_name(node)
            if name == "add_argument":
                declaration, strings = _declaration(node)
                declaring.update(map(id, strings))
                computed = computed or declaration is None or _reads_a_config_file(node)
                if declaration is not None and declaration.options:
                    declared.append(declaration)
                continue
            if name in _KEYWORD_SETTERS:
                keywords.update(keyword.arg for keyword in node.keywords if keyword.arg is not None)
                computed = computed or any(keyword.arg is None for keyword in node.keywords)
            computed = computed or _passes_unseen_options(node, name)
        elif kind is ast.Assign or kind is ast.AnnAssign:
            from_parse = _bound_from_parse(node, wrappers)
            parsed.update(from_parse)
            targets = node.targets if kind is ast.Assign else [node.target]
            if not from_parse and node.value is not None:
                assigned += [(target.id, node.value) for target in targets if isinstance(target, ast.Name)]
            computed = computed or any(_is_sys_argv(target) for target in targets) and not _only_words(node.value)
        elif kind is ast.AugAssign:
            computed = computed or _is_sys_argv(node.target) and not _only_words(node.value)
        elif kind is ast.Constant and isinstance(node.value, str) and "-" in node.value and id(node) not in declaring:
            spelled.update(OPTION_WORD.findall(node.value))
            computed = computed or _FORMATTED_OPTION.search(node.value) is not None
        elif kind is ast.JoinedStr:
            computed = computed or _formats_an_option(node.values)
        elif kind is ast.BinOp and isinstance(node.op, ast.Add):
            computed = computed or _option_prefix(node.left, first=True)
    parsed -= _rebuilt_from_themselves(parsed, assigned, _returning_a_parameter(tree) if parsed and assigned else {})
    if "#" in source:
        for comment in _COMMENT.findall(source):
            spelled.update(OPTION_WORD.findall(comment))
    if not (declared or parsed or spelled or keywords or computed):
        return NO_COMMAND_LINE
    return CommandLine(tuple(declared), frozenset(parsed), frozenset(spelled), frozenset(keywords), computed, wrappers)


def _rebuilt_from_themselves(
    names: set[str], assigned: list[tuple[str, ast.AST]], identities: dict[str, tuple[str, int, bool]]
) -> set[str]:
    """Those of ``names`` that an assignment binds anew from a value reading the name
    (``args = merge(args, cfg)``, ``args = Config.fromfile(args.config)``), unless the value
    is a call of a function of the file that returns the very object it is handed
    (``identities``: CenterNet's ``opt = self.update_dataset_info_and_set_heads(opt, dataset)``
    stores attributes on ``opt`` and returns it; stores are counted anyway)."""
    return {name for name, value in assigned if name in names and not _hands_back(value, name, identities)
            and any(isinstance(node, ast.Name) and node.id == name for node in ast.walk(value))}


def _hands_back(value: ast.AST, name: str, identities: dict[str, tuple[str, int, bool]]) -> bool:
    """``value`` is a call of a function of ``identities`` that passes ``name`` itself as
    the parameter the function returns, and reads ``name`` nowhere else."""
    if not isinstance(value, ast.Call) or _called_name(value) not in identities:
        return False
    param, position, method = identities[_called_name(value)]
    if method != isinstance(value.func, ast.Attribute):
        return False  # (``f(args)`` calls the file's function ``f``, ``obj.f(args)`` a method)
    passed = next((keyword.value for keyword in value.keywords if keyword.arg == param),
                  value.args[position] if 0 <= position < len(value.args) else None)
    if not (isinstance(passed, ast.Name) and passed.id == name) or any(isinstance(arg, ast.Starred) for arg in value.args):
        return False
    return sum(isinstance(node, ast.Name) and node.id == name for node in ast.walk(value)) == 1


def _returning_a_parameter(tree: ast.Module) -> dict[str, tuple[str, int, bool]]:
    """Functions and methods of the file (by name) whose every ``return`` gives back one
    parameter unchanged: name -> (the parameter, its position in a call: a method's
    ``self`` is not passed, whether it is a method). A name defined twice otherwise is
    left out."""
    found: dict[str, tuple[str, int, bool]] = {}
    other: set[str] = set()
    for scope in ast.walk(tree):
        body = scope.body if isinstance(scope, (ast.Module, ast.ClassDef)) else ()
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            returned = _returned_parameter(node)
            if returned is None:
                other.add(node.name)
                continue
            param, position = returned
            method = isinstance(scope, ast.ClassDef)
            if method and not any(_is_static(decorator) for decorator in node.decorator_list):
                position -= 1  # ``self``/``cls``, bound by the attribute the call goes through
            if found.setdefault(node.name, (param, position, method)) != (param, position, method):
                other.add(node.name)
    return {name: value for name, value in found.items() if name not in other}


def _is_static(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


def _returned_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, int] | None:
    """(name, position) of the parameter every ``return`` of ``function`` (not of functions
    nested in it) gives back, one it never rebinds; None otherwise (no ``return``, a
    generator, another value)."""
    positional = [arg.arg for arg in [*function.args.posonlyargs, *function.args.args]]
    nodes, returned = _returned_values(function)
    if not returned:
        return None
    names = {value.id if isinstance(value, ast.Name) else None for value in returned}
    if len(names) != 1:
        return None
    name = names.pop()
    if name not in positional or any(name in names_bound_by(node) for node in nodes):
        return None
    return name, positional.index(name)


def _passes_unseen_options(call: ast.Call, name: str) -> bool:
    """Whether ``call`` may pass options no text of the project shows: a parse into a
    namespace it is handed (``parse_args(namespace=cfg)``, ``parse_args(argv, cfg)``: the
    namespace keeps the attributes it holds), a parser that reads options from files
    (``ArgumentParser(fromfile_prefix_chars="@")``; jsonargparse's
    ``default_config_files=[...]``) or the environment (jsonargparse's
    ``default_env=True``), or computed words added to ``sys.argv`` (``sys.argv.extend(extra)``)."""
    if name in _PARSE_CALLS:
        return len(call.args) > 1 or any(keyword.arg in ("namespace", None) for keyword in call.keywords)
    if name == "ArgumentParser":
        return any(keyword.arg in _READERS_OF_OPTIONS and constant_value(keyword.value) not in ((None,), (False,))
                   for keyword in call.keywords)
    if name in _LIST_ADDERS and isinstance(call.func, ast.Attribute) and _is_sys_argv(call.func.value):
        return not all(map(_only_words, call.args[1:] if name == "insert" else call.args))
    return False


def _reads_a_config_file(call: ast.Call) -> bool:
    """``add_argument("--config", action=ActionConfigFile)``: the file's keys set any flag."""
    return any(keyword.arg == "action" and _CONFIG_FILE_ACTION in ast.dump(keyword.value) for keyword in call.keywords)


def _is_sys_argv(node: ast.AST) -> bool:
    """``sys.argv``, or an item or slice of it (``sys.argv[1:]``)."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return (isinstance(node, ast.Attribute) and node.attr == "argv"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _only_words(node: ast.AST | None) -> bool:
    """``node`` holds only words the text spells, or ``sys.argv``'s own: ``"--masks"``,
    ``["--lr", "1"]``, ``[sys.argv[0], *sys.argv[2:]]``, ``sys.argv[:1] + ["--amp"]``."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(map(_only_words, node.elts))
    if isinstance(node, ast.Starred):
        return _only_words(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _only_words(node.left) and _only_words(node.right)
    return node is not None and _is_sys_argv(node)


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _declaration(call: ast.Call) -> tuple[FlagDeclaration | None, list[ast.Constant]]:
    """The declaration ``add_argument(...)`` makes (no options: a positional argument,
    which every run passes), and its option-string nodes; None for a computed option."""
    strings = [arg for arg in call.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]
    if len(strings) != len(call.args):
        return None, strings
    options = tuple(arg.value for arg in strings if arg.value.startswith("-"))
    keywords = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg is not None}
    dest = constant_value(keywords.get("dest"))
    if dest and isinstance(dest[0], str):
        dest_name = dest[0]
    else:
        longest = next((option for option in options if option.startswith("--")), options[0] if options else "")
        dest_name = longest.lstrip("-").replace("-", "_")
    return FlagDeclaration(dest_name, options, _default(keywords, call)), strings


def _default(keywords: dict[str, ast.expr], call: ast.Call) -> Default:
    """What the destination holds when no run passes the option: a switch's default
    (``store_true``: ``False``), or a single value's (``default=0.5``, none: ``None``);
    ``()`` when it cannot be told (a computed default, ``**kwargs``, a list of values, a
    string default that ``type=`` converts, a required option, other actions)."""
    if any(keyword.arg is None for keyword in call.keywords):
        return ()
    action = constant_value(keywords.get("action")) if "action" in keywords else ("store",)
    if not action or action[0] not in (*_SWITCH_DEFAULTS, "store"):
        return ()
    if action[0] in _SWITCH_DEFAULTS:
        return constant_value(keywords["default"]) if "default" in keywords else (_SWITCH_DEFAULTS[action[0]],)
    if "nargs" in keywords or ("required" in keywords and constant_value(keywords["required"]) != (False,)):
        return ()  # (a computed ``required=`` may hold: every run then passes it)
    default = constant_value(keywords["default"]) if "default" in keywords else (None,)
    converter = keywords.get("type")
    if default and isinstance(default[0], str) and converter is not None and not (
            isinstance(converter, ast.Name) and converter.id == "str"):
        return ()  # (argparse passes a string default through ``type``)
    return default


def _is_parse(node: ast.AST | None, wrappers: frozenset[str] = frozenset()) -> bool:
    """``parser.parse_args(...)`` (or ``parse_known_args(...)[0]``), a call of a function of
    the file that returns one (``wrappers``: yolov5's ``opt = parse_opt()``), or a choice
    between such (``parser.parse_known_args()[0] if known else parser.parse_args()``)."""
    if isinstance(node, ast.IfExp):
        return _is_parse(node.body, wrappers) and _is_parse(node.orelse, wrappers)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and node.slice.value == 0:
        node = node.value
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr in _PARSE_CALLS
            or isinstance(func, ast.Name) and func.id in wrappers)


def parse_wrappers(tree: ast.Module) -> frozenset[str]:
    """The functions of the module (its top level) whose every ``return`` gives the result
    of ``parse_args`` (yolov5's ``def parse_opt(known=False): ... return
    parser.parse_known_args()[0] if known else parser.parse_args()``), or a name they bind
    only from it (``opt = parser.parse_args(); ...; return opt``)."""
    found = set()
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _mentions_a_parse(node):
            continue
        nodes, returned = _returned_values(node)
        if not returned:
            continue
        local = parse_bound_names(nodes)
        if all(_is_parse(value) or isinstance(value, ast.Name) and value.id in local for value in returned):
            found.add(node.name)
    return frozenset(found)


def _returned_values(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
) -> tuple[list[ast.AST], list[ast.expr | None]]:
    """The function's own nodes (not those of functions nested in it), and the values its
    ``return`` statements give (None for a bare ``return``); no values for a generator,
    whose ``return`` gives no caller anything, or a function that never returns."""
    nodes = own_nodes(function.body, [])
    if any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in nodes):
        return nodes, []
    return nodes, [node.value for node in nodes if isinstance(node, ast.Return)]


def _mentions_a_parse(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr in _PARSE_CALLS for node in ast.walk(function))


def _bound_from_parse(node: ast.Assign | ast.AnnAssign, wrappers: frozenset[str] = frozenset()) -> list[str]:
    """The name ``args = parser.parse_args()`` (``args, rest = parser.parse_known_args()``,
    ``opt = parse_opt()`` of a wrapper) binds."""
    value = node.value
    if not isinstance(value, (ast.Call, ast.Subscript, ast.IfExp)) or not _is_parse(value, wrappers):
        return []
    found = []
    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
        if isinstance(target, (ast.Tuple, ast.List)) and target.elts and isinstance(value, ast.Call):
            target = target.elts[0]
        if isinstance(target, ast.Name):
            found.append(target.id)
    return found


def parse_bound_names(nodes: Iterable[ast.AST], wrappers: frozenset[str] = frozenset()) -> set[str]:
    """The names that a scope (its own ``nodes``) binds only ever from ``parse_args(...)``
    (or a call of one of the file's ``wrappers``, see :func:`parse_wrappers`)."""
    return _bound_only_by(nodes, lambda node: _bound_from_parse(node, wrappers))


def module_parse_bound_names(
    tree: ast.Module, own: Iterable[ast.AST], wrappers: frozenset[str] = frozenset()
) -> set[str]:
    """The names the module's top level (its ``own`` nodes) binds only ever from
    ``parse_args(...)`` (or one of the file's ``wrappers``), less those a function of it
    declares ``global`` and binds otherwise: after ``global args; args = Config(path)``
    the module's ``args`` holds whatever that function gives it, any attribute a
    configuration holds."""
    parsed = parse_bound_names(own, wrappers)
    if not parsed:
        return parsed
    for node in ast.walk(tree):
        if type(node) is ast.FunctionDef or type(node) is ast.AsyncFunctionDef:
            nodes = function_nodes(node)
            declared = {name for inner in nodes if type(inner) is ast.Global for name in inner.names} & parsed
            if declared:
                bound = {name for inner in nodes for name in names_bound_by(inner)}
                parsed -= (declared & bound) - parse_bound_names(nodes, wrappers)
    return parsed


def self_aliases(nodes: Iterable[ast.AST]) -> set[str]:
    """The names that a method (its own ``nodes``) binds only ever from the attribute of
    ``self`` of the same name: CenterNet's ``opt = self.opt`` in ``CtdetLoss.forward``,
    whose ``__init__`` stored the ``opt`` it was handed (a flag read on it is read on
    that object: :func:`synclint.project.step_branches.blocks_closed_by_constants`)."""
    return _bound_only_by(nodes, _bound_from_self)


def _bound_from_self(node: ast.Assign | ast.AnnAssign) -> list[str]:
    """The name ``opt = self.opt`` binds."""
    value = node.value
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self"):
        return []
    return [target.id for target in targets if isinstance(target, ast.Name) and target.id == value.attr]


def _bound_only_by(nodes: Iterable[ast.AST], binding: Callable[[ast.Assign | ast.AnnAssign], list[str]]) -> set[str]:
    """The names that ``nodes`` (a scope's own) bind, every time, by assignments whose
    names ``binding`` gives."""
    nodes = list(nodes)
    found: set[str] = set()
    targets: set[int] = set()  # (the names of those assignments, which are nodes of the scope too)
    for node in nodes:
        if type(node) is ast.Assign or type(node) is ast.AnnAssign:
            bound = binding(node)
            if bound:
                found.update(bound)
                for target in node.targets if type(node) is ast.Assign else [node.target]:
                    targets.update(id(name) for name in ast.walk(target) if type(name) is ast.Name)
    other = {name for node in nodes if id(node) not in targets for name in names_bound_by(node)}
    return found - other


def _formats_an_option(values: Sequence[ast.AST]) -> bool:
    """``f"--{name}"``, ``f"python main.py --{name}"``: an option's name formatted in
    (not the ``-`` of ``f"{stem}-{i}"``)."""
    return any(_option_prefix(value, first=position == 0) and isinstance(after, ast.FormattedValue)
               for position, (value, after) in enumerate(zip(values, values[1:])))


def _option_prefix(node: ast.AST, first: bool) -> bool:
    """``node`` is text ending with an option's dashes, where an option may start: at the
    start of the string (``first``: ``"--" + name``) or after a space."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.endswith("-")):
        return False
    before = node.value.rstrip("-")
    return before[-1:].isspace() if before else first


#: Options launchers add to the program's command line, which no text of the project shows:
#: ``torch.distributed.launch`` (and DeepSpeed's launcher) pass ``--local_rank=N`` to each
#: process (``--local-rank`` since torch 2.0).
INJECTED_BY_LAUNCHERS = frozenset({"--local_rank", "--local-rank"})


def is_passed(option: str, words: Iterable[str]) -> bool:
    """Whether one of ``words`` (option-like words of the project's text) passes ``option``:
    itself or an abbreviation argparse accepts (``--mask`` for ``--masks``); for a
    single-dash option, a single-dash word holding its letters (``-vm`` sets ``-m``).
    A launcher passes :data:`INJECTED_BY_LAUNCHERS` to any program."""
    if option in INJECTED_BY_LAUNCHERS:
        return True
    if option.startswith("--"):
        return any(word.startswith("--") and option.startswith(word) for word in words)
    letters = set(option[1:])
    return any(not word.startswith("--") and letters & set(word[1:]) for word in words)


def options_spelled_in(paths: Iterable[str]) -> set[str] | None:
    """The option-like words of the files ``paths`` (read as bytes, in overlapping
    pieces); None when one cannot be read (it may pass any option)."""
    found: set[bytes] = set()
    for path in paths:
        try:
            for text in _pieces(path):
                found.update(_OPTION_BYTES.findall(text))
        except OSError:
            return None
    return {word.decode("ascii", "replace") for word in found}


def _pieces(path: str) -> Iterator[bytes]:
    """The bytes of the file ``path`` in pieces that overlap by :data:`_OVERLAP` (an
    option or a name never falls between two); OSError when it cannot be read."""
    with open(path, "rb") as handle:
        tail = b""
        while chunk := handle.read(_CHUNK):
            text = tail + chunk
            yield text
            tail = text[-_OVERLAP:]


#: A name given a constant in Python (``%s`` stands for the name): a keyword
#: (``EasyDict(masks=True)``), a dict key (``{"masks": True}``) or an assignment (a
#: Python configuration file's ``masks = True``, ``masks: bool = True``); not an
#: attribute's (``args.masks``: a store, known otherwise), nor a longer name's
#: (``return_masks=True``), nor a computed value (``{"masks": self.loss_masks}``).
_GIVEN_A_CONSTANT = rb"""(?<![\w.])["']?%s["']?\s*(?::[\w\[\]., ]*)?[:=]\s*(?:True|False|[-+]?\.?\d|["'])"""


def given_a_constant_in(paths: Iterable[str], names: set[str]) -> set[str]:
    """Those of ``names`` that a Python file of ``paths`` gives a constant by name (see
    :data:`_GIVEN_A_CONSTANT`): a config object built so may be passed as ``args``. Read
    as bytes in overlapping pieces, then, where the text matches, confirmed on the file's
    tree (:func:`_given_in_tree`): RAFT's ``train()`` binds a local ``add_noise = True``,
    which no namespace ever holds. A file that cannot be read may give any."""
    patterns = {name: re.compile(_GIVEN_A_CONSTANT % re.escape(name.encode())) for name in names}
    found: set[str] = set()
    for path in paths:
        try:
            matched = set()
            for text in _pieces(path):
                matched.update(name for name, pattern in patterns.items()
                               if name not in found and name not in matched and pattern.search(text))
            found |= _given_in_tree(path, matched) if matched else set()
            if len(found) == len(patterns):
                return found
        except OSError:
            return set(names)
    return found


def _is_constant(node: ast.AST) -> bool:
    """A literal (``True``, ``"data/coco"``, ``-1``)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant)


def _given_in_tree(path: str, names: set[str]) -> set[str]:
    """Those of ``names`` the Python file ``path`` gives a constant as a keyword
    (``EasyDict(masks=True)``), a dict key (``{"masks": True}``) or an assignment at the
    top of the module or of a class (a Python configuration file's ``masks = True``, a
    dataclass field ``masks: bool = True``); not a function's local, which no namespace
    holds, nor a parameter's default, unless a keyword or a dict key hands that local on
    (``masks = True; return EasyDict(masks=masks)``). All of them when the file cannot be
    parsed."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set(names)
    constant_names = {target.id for node in ast.walk(tree) for target in _constant_targets(node)
                      if isinstance(target, ast.Name)}

    def constant(value: ast.AST) -> bool:
        return _is_constant(value) or isinstance(value, ast.Name) and value.id in constant_names

    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword):
            if node.arg in names and constant(node.value):
                found.add(node.arg)
        elif isinstance(node, ast.Dict):
            found.update(key.value for key, value in zip(node.keys, node.values)
                         if isinstance(key, ast.Constant) and key.value in names and constant(value))
        elif isinstance(node, (ast.Module, ast.ClassDef)):
            found.update(target.id for statement in own_nodes(node.body, []) for target in _constant_targets(statement)
                         if isinstance(target, ast.Name) and target.id in names)
    return found


def _constant_targets(node: ast.AST) -> list[ast.expr]:
    """The targets ``node`` assigns a constant (``masks = True``, ``masks: bool = True``)."""
    if isinstance(node, ast.Assign) and _is_constant(node.value):
        return node.targets
    if isinstance(node, ast.AnnAssign) and node.value is not None and _is_constant(node.value):
        return [node.target]
    return []


class ConstantFlag(NamedTuple):
    """A flag no one passes or sets: the option to name it by, and the values it holds."""

    option: str
    values: frozenset[object]


def unpassed_flags(
    files: Sequence[tuple[CommandLine, bool, frozenset[str]]], texts: Callable[[], set[str] | None], wanted: set[str]
) -> dict[str, ConstantFlag]:
    """The destinations among ``wanted`` (those some guard tests) that hold only their
    constant defaults: ``files`` are each Python file's :class:`CommandLine`, whether it
    is program code (not a test) and the attribute names it stores; ``texts`` reads the
    option-like words of the project's other files (None: unknown)."""
    if any(program and command.by_computed_name for command, program, _stores in files):
        return {}
    defaults: dict[str, set[object]] = {}
    options: dict[str, list[str]] = {}
    unknown: set[str] = set()
    for command, _program, stores in files:
        unknown.update(command.set_by_keyword, stores)
        for declaration in command.declared:
            if not declaration.default:
                unknown.add(declaration.dest)
            defaults.setdefault(declaration.dest, set()).update(declaration.default)
            options.setdefault(declaration.dest, []).extend(declaration.options)
    candidates = {dest for dest in wanted & defaults.keys() if dest not in unknown}
    if not candidates:
        return {}
    words = set().union(*(command.options_spelled for command, _program, _stores in files))
    candidates = {dest for dest in candidates if not any(is_passed(option, words) for option in options[dest])}
    spelled = texts() if candidates else set()
    if spelled is None:
        return {}
    return {
        dest: ConstantFlag(options[dest][0], frozenset(defaults[dest]))
        for dest in sorted(candidates) if not any(is_passed(option, spelled) for option in options[dest])
    }
