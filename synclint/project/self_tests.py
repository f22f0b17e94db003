"""The ``__main__`` block of a module that other project files import: a self-test or demo.

Research code keeps a module's usage example, shape check or quick benchmark in the module,
under ``if __name__ == "__main__":``. vall-e's ``valle/modules/optim.py`` runs
``_test_scaled_adam`` there, an optimizer's self-test on random CPU tensors; llm-foundry's
``llmfoundry/data/finetuning/dataloader.py`` prints five batches of a loader it builds. The
program imports such a module, and the block runs only when someone runs the file by hand:
never in a training or inference step.

A block is a self-test when all of these hold:

* **The module is a package's, and another file imports it by its dotted name**
  (``from valle.modules.optim import ScaledAdam``, a relative import, or the name under a
  longer package path where the project is vendored deeper): a library module. Not a script beside the others, which other scripts may import a helper from
  (``from train import parse_args``) while it stays the training script.
* **Nothing documents running it**: no configuration file, shell script, notebook or
  documentation page spells its path or its dotted name (``python -m pkg.tool``,
  ``python pkg/tool.py``), nor a string or comment of a Python file, its own (a docstring)
  or another's (a launcher's ``subprocess.run``), a test's aside.
* **The block does not train**: no loop in it, nor in the module's functions and classes
  it names (``main()``, and what ``main`` names in turn), nor in a project function its
  calls reach (``engine.train_one_epoch``), draws batches and runs a backward
  pass; nor does a loop that draws batches, in the block or on the way, call a function
  that runs one (``for x in loader: update(model, x)``) (:func:`~synclint.project.summary.trains_on_batches`).
* **An import by a file that is no test**: tests import the module they test, script or not.
* **A guard false on import**: ``__name__ == "__main__"``, alone or in an ``and``.

Its lines are cold, loops over batches among them: they are the self-test's passes, not a
step's. Its calls make nothing hot: the block is one the step never enters (see
:mod:`synclint.project.step_branches`), like a block a constant closes (``__name__`` is not
``"__main__"`` in a module that is imported). A function that only such blocks call is the
self-test's too, loops and all, unless some file hands it on as a value (pvcnn's
``evaluate``, called by its module's block and stored in a config the trainer calls):
whatever holds it may run it every step.

Only a whole project shows who imports a module (not a piece of a split one).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from synclint.project.cold_reasons import SELF_TEST
from synclint.project.index import FunctionId, ProjectIndex
from synclint.project.layout import dotted_tails
from synclint.project.mentions import python_text_of, spelled_in, spelled_names, strings_and_comments
from synclint.project.step_branches import SkippedBlocks
from synclint.project.summary import is_test_file

def self_test_blocks(index: ProjectIndex, importers: Mapping[str, set[str]]) -> dict[FunctionId, SkippedBlocks]:
    """The self-test blocks of the project's modules, as blocks of their module code
    (``(file key, "<module>")``). ``importers``: the files (keys) whose import statements
    name each dotted module name."""
    # Each imported name by its tails: ``vision.fair.slowfast.tools.train_net`` may import
    # ``tools.train_net`` (the project vendored under a longer package path).
    # Tests import the module they test, script or library: they are no evidence.
    by_tail: dict[str, set[str]] = {}
    for name, files in importers.items():
        for tail in dotted_tails(name):
            by_tail.setdefault(tail, set()).update(key for key in files if not is_test_file(key))
    candidates: dict[str, list[tuple[int, int]]] = {}
    for key, entry in index.entries.items():
        blocks = entry.summary.main_blocks
        if not blocks or "." not in entry.name or is_test_file(key) or "<module>" not in entry.summary.functions:
            continue
        path = Path(key)
        if path.name == "__init__.py" or str(path.parent / "__init__.py") not in index.entries:
            continue  # (a package's own ``__init__``, or a script beside the others)
        if by_tail.get(entry.name, set()) - {key} and not _reaches_training(index, key, blocks):
            candidates[key] = list(blocks)
    if not candidates:
        return {}
    spellings = {key: _spellings(index, key) for key in candidates}
    spelled = spelled_in(index.naming_files, set().union(*spellings.values()))
    spelled |= _spelled_in_python(index, {key: forms - spelled for key, forms in spellings.items() if forms.isdisjoint(spelled)})
    return {
        (key, "<module>"): tuple((first, last, SELF_TEST) for first, last in blocks)
        for key, blocks in sorted(candidates.items())
        if spellings[key].isdisjoint(spelled)
    }


def _spelled_in_python(index: ProjectIndex, own: Mapping[str, set[str]]) -> set[str]:
    """Those of the candidates' spellings (``own``: file key -> its module's spellings) that
    a Python file's strings or comments spell: the module's own (a docstring's ``python -m
    pkg.evaluate``) or another's (a launcher's ``subprocess.run([sys.executable, "-m",
    "pkg.evaluate"])``). Not code (``pkg.optim.Adam`` after ``import pkg.optim`` uses the
    module, as an import does), nor a test's: it runs the module as a check. A byte search
    first: only files that hold a spelling are parsed."""
    forms = set().union(*own.values()) if own else set()
    spelled: set[str] = set()
    for key in index.entries:
        if not forms - spelled or is_test_file(key):
            continue
        if not spelled_in([key], forms - spelled):
            continue
        text = python_text_of(key)
        if text is None:
            continue
        spelled |= spelled_names(strings_and_comments(text), forms - spelled, {})[0]
    return spelled


def _spellings(index: ProjectIndex, key: str) -> set[str]:
    """How a text would name the module to run it: its dotted name (``-m pkg.tool``) and its
    path in the project (``pkg/tool.py``), and each of their tails of two parts or more, run
    from a folder below the project's root (``cd code && python pkg/tool.py``, where the
    root holds ``code/pkg/tool.py``)."""
    dotted = {tail for tail in dotted_tails(index.entries[key].name) if "." in tail}
    parts = index.relative_parts(key)
    paths = {"/".join(parts[cut:]) for cut in range(len(parts) - 1)}
    return dotted | paths | {tail.replace(".", "/") + ".py" for tail in dotted}


def _reaches_training(index: ProjectIndex, key: str, blocks: tuple[tuple[int, int], ...]) -> bool:
    """Whether a block's calls reach, through the project's functions, one that trains
    (``main()`` that calls ``engine.train_one_epoch``), or a backward pass from inside a
    loop that draws batches: the module is then the program's entry point, however many
    files import a helper from it. (The summary already asked whether one loop of the
    module's own functions and classes the block names does both.)"""
    calls = index.resolved_calls()
    module = (key, "<module>")

    def in_a_drawing_loop(fid: FunctionId, line: int) -> bool:
        function = index.function(fid)
        return function is not None and any(first <= line <= last for first, last in function.draws)

    # Each function reached, with whether a loop that draws batches (the block's own, or a
    # caller's on the way) holds the call: a backward pass there trains (``for x in
    # loader: update(model, x)``), though no one loop holds both; one in a self-test's
    # loop over its own pairs (vall-e's ``_test_scaled_adam``) does not.
    queue = [(callee, in_a_drawing_loop(module, call.line)) for call, callee in calls.get(module, ())
             if any(first <= call.line <= last for first, last in blocks)]
    seen = set(queue)
    while queue:
        fid, drawn = queue.pop()
        function = index.function(fid)
        if function is not None and (function.trains or (drawn and function.backward)):
            return True
        for call, callee in calls.get(fid, ()):
            reached = (callee, drawn or in_a_drawing_loop(fid, call.line))
            if reached not in seen:
                seen.add(reached)
                queue.append(reached)
    return False
