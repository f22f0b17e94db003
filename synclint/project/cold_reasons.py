"""The reasons for cold code that put it outside the training or inference program (its
tests, export and plotting tools, demos, type stubs), shared by hotness and by the step's
branches, which must not count such code's calls as the step's."""

from __future__ import annotations

from collections.abc import Sequence

#: Why a type stub (``.pyi``) is cold: it declares signatures and never runs.
TYPE_STUB = "type stub (never runs)"
#: The ``why`` of an unknown finding with no local evidence of a per-step cost, in a
#: project whose whole call graph was seen: hidden by default, like cold ones.
UNREACHED = "not reached from any step of the project"
#: The ``why`` of code in a class nothing in the project names (see
#: :mod:`synclint.project.unnamed_classes`): it cannot run, whatever its methods are called.
_NEVER_NAMED = f"{UNREACHED}: nothing in the project names "

#: ``convert_checkpoint.py``, ``inspect_checkpoints.py`` (see :mod:`synclint.project.hotness`).
CONVERSION_TOOL = "a checkpoint conversion or inspection tool"
#: ``demo/``, ``image_demo.py``.
DEMO_CODE = "demo code"
#: ``templates/{{cookiecutter.directory_name}}/run_{{cookiecutter.example}}.py``: text a
#: project generator fills in (Hugging Face's example templates, vendored into LoRA).
TEMPLATE_CODE = "a template to generate code from (`{{...}}` in its path)"
#: ``tools/visualization.py``, ``plotting.py``.
PLOTTING_CODE = "plotting or visualization code"
#: ``docs/source/snippets/model.py``: code the documentation shows (``literalinclude``) or
#: runs to build itself, not the program.
DOCUMENTATION_CODE = "documentation code (its snippets and examples)"
#: Every file of a project that trains its models and never names a device (see
#: :func:`synclint.project.facts.host_only_project`): its tensors live on the host.
HOST_ONLY_PROJECT = ("a project that never names a device (no `cuda`, `gpu`, `device` or accelerator in its code "
                     "or configuration): its tensors live on the host")
#: Why a whole file is cold as test code, by its name or by its folder (see
#: :func:`synclint.project.hotness.file_context`).
TEST_CONTEXTS = frozenset({"test code", "test or benchmark code"})
#: Why a file in a test or benchmark folder (``tests/``) is cold.
TEST_OR_BENCHMARK_CODE = "test or benchmark code"
#: The ``__main__`` block of a module other files import (see :mod:`synclint.project.self_tests`).
SELF_TEST = "a self-test or demo (the `__main__` block of a module that other files of the project import)"
#: A function that only such blocks call, and no file hands on as a value.
SELF_TEST_HELPER = f"called only from {SELF_TEST}"


def is_self_test(why: str) -> bool:
    """Whether a cold context's ``why`` puts the code in a self-test (a block or what only it
    calls): its loops over batches are the self-test's passes, not steps."""
    return why in (SELF_TEST, SELF_TEST_HELPER)


def is_never_named(why: str) -> bool:
    """Whether ``why`` is :func:`never_named`'s: code in a class or function nothing names."""
    return why.startswith(_NEVER_NAMED)


def never_named(class_name: str, only_passed_on: bool = False, only_inside: Sequence[str] = ()) -> str:
    """Why a class nothing names never runs; ``only_passed_on``: imports and ``__all__``
    name it, in a project nobody installs; ``only_inside``: only the code of these, which
    never runs either, names it."""
    if only_inside:
        return f"{_NEVER_NAMED}`{class_name}` but code that never runs ({_listed(only_inside)})"
    return f"{_NEVER_NAMED}`{class_name}`" + (" but imports that pass it on" if only_passed_on else "")


def built_only_by_tests(class_name: str) -> str:
    """Why a class only the project's tests name never runs in the program (a cold why: the
    tests do build it)."""
    return f"test code only: only the project's tests name `{class_name}`"


def _listed(names: Sequence[str]) -> str:
    """```A```, ```A` and `B```, ```A`, `B` and `C```."""
    quoted = [f"`{name}`" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _root_reason(why: str) -> str:
    """``called only from test code (...)`` -> ``test code``."""
    return why.removeprefix("called only from ").split(" (")[0]


#: The end of the why of code in a module no file imports (see
#: :mod:`synclint.project.unimported_modules`), which no part of the program runs.
_NO_SCRIPT = " and is no script"

#: Cold reasons that put code outside the training or inference program itself (its
#: tests, benchmarks, export and plotting tools, type stubs), unlike setup code of the
#: program, which runs once but builds what every step uses.
_OUTSIDE_THE_PROGRAM = frozenset(
    {"test code", "test or benchmark code", "export code", "export, plotting or benchmarking code",
     _root_reason(TYPE_STUB), CONVERSION_TOOL, DEMO_CODE, DOCUMENTATION_CODE, PLOTTING_CODE, TEMPLATE_CODE,
     _root_reason(SELF_TEST),
     # (Not outside the program, but nothing about a device matters in it: no copy, no pinning.)
     HOST_ONLY_PROJECT}
)


#: The end of the why of a function its module defines again before anything calls it
#: (see :mod:`synclint.project.redefined`).
_REDEFINED = " before anything calls it"


def redefined(name: str, line: int) -> str:
    """Why a top-level function its module defines again at ``line`` never runs."""
    return f"never runs: `{name}` is defined again at line {line}{_REDEFINED}"


def outside_the_program(why: str) -> bool:
    """Whether a cold context's ``why`` says the code is no part of the program's steps at
    all (itself, or only called from such code; a module that never runs, or a function
    defined again before any call, among them). A hazard that matters wherever the program
    builds it (an unpinned ``DataLoader`` made in ``__init__``) is still none there."""
    return _root_reason(why) in _OUTSIDE_THE_PROGRAM or why.endswith((_NO_SCRIPT, _REDEFINED))


def never_imported(path: str, importer: str | None = None) -> str:
    """Why a module no file imports and that is no script is cold; ``importer``: a module
    that never runs either and imports it."""
    if importer is None:
        return f"never runs: `{path}` is imported by no file of the project{_NO_SCRIPT}"
    return f"never runs: `{path}` is imported only by modules that never run, such as `{importer}`,{_NO_SCRIPT}"
