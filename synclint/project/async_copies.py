"""Whether code asks for an asynchronous host-to-device copy: SL402's evidence.

A blocking copy (``x.to(device)``, ``x.cuda()``) waits for the device whether its source
is pinned or not: PyTorch's CUDA ``copy_`` enqueues ``cudaMemcpyAsync`` and, unless
``non_blocking`` is true, synchronises the stream right after (``memcpy_and_sync`` in
``aten/src/ATen/native/cuda/Copy.cu``). An unpinned loader costs a wait of its own only
where some copy of its batches asks not to block, so a project is asked whether any of
its code does (the index does not follow a loader to the copies of its batches):

- a ``non_blocking`` argument that is not the constant ``False``: a keyword
  (``non_blocking=args.async_copy`` may be true), a dictionary's key
  (``x.to(d, **{"non_blocking": True})``, ``accelerator_config={"non_blocking": True}``),
  or ``True`` in its place among the positional arguments of ``cuda``/``to``/``copy_``;
- an import of a library that copies every batch with ``non_blocking=True`` itself;
- a file Python cannot parse (a Python 2 script) or a notebook, by its text: a
  ``non_blocking=`` or ``async=`` keyword (PyTorch before 0.4 spelled it ``async``)
  that is not ``False``, or such an import.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path

#: Libraries whose training loops copy each batch with ``non_blocking=True`` themselves
#: (by the top-level module): Lightning's ``move_data_to_device`` (Trainer and Fabric);
#: Composer's ``DeviceGPU``; torchtnt's ``AutoUnit``, which prefetches training batches on
#: a side stream (``torchtnt/framework/auto_unit.py``, ``_prefetch_next_batch``); Catalyst's
#: runners (``catalyst/core/runner.py`` ``_handle_device`` -> ``any2device`` in
#: ``catalyst/utils/torch.py``: ``value.to(device, non_blocking=True)``). Not Accelerate,
#: HF Trainer, ignite, mmengine or fastai: their copies block unless asked (by a keyword).
ASYNC_COPYING_LIBRARIES = frozenset({"lightning", "pytorch_lightning", "lightning_fabric", "composer", "torchtnt",
                                     "catalyst"})

#: Wrappers that copy the batches they are handed with ``non_blocking=True``: timm's
#: ``PrefetchLoader`` around a loader (``timm/data/loader.py``: ``next_input.to(device=...,
#: non_blocking=True)``); mmcv's model wrappers, which scatter the host batches an mmcv
#: runner hands them on a side stream (``mmcv/parallel/_functions.py``, ``Scatter.forward``:
#: ``comm.scatter``, or in other versions ``output.cuda(devices[0], non_blocking=True)``).
ASYNC_COPYING_CALLABLES = frozenset({
    "timm.data.PrefetchLoader", "timm.data.loader.PrefetchLoader",
    "mmcv.parallel.MMDataParallel", "mmcv.parallel.data_parallel.MMDataParallel",
    "mmcv.parallel.MMDistributedDataParallel", "mmcv.parallel.distributed.MMDistributedDataParallel",
})
_CALLABLE_NAMES = frozenset(name.rsplit(".", 1)[1] for name in ASYNC_COPYING_CALLABLES)

#: Where ``non_blocking`` stands among a copy's positional arguments: ``cuda(device,
#: non_blocking)``, ``copy_(src, non_blocking)``, ``to(dtype, non_blocking)`` or
#: ``to(device, dtype, non_blocking)``. Only a literal ``True`` there is read as one.
_POSITIONAL_NON_BLOCKING = {"cuda": (1,), "copy_": (1,), "to": (1, 2)}
#: (The text that may hold one, so that only such files are walked: arguments may nest a call.)
_POSITIONAL_TRUE = re.compile(r"\.(?:cuda|to|copy_)\((?:[^()]|\([^()]*\))*,\s*True\s*[,)]")

#: The text of code that may ask: a keyword (or a dictionary's key) that is not ``False``.
_ASKING_TEXT = re.compile(r"""\b(?:non_blocking|async)\s*=(?!=)\s*(?!False\b)|["']non_blocking["']\s*:\s*(?!False\b)""")
_LIBRARY_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(?:%s)\b" % "|".join(sorted(ASYNC_COPYING_LIBRARIES)), re.MULTILINE
)

Imports = dict[str, tuple[int, str, "str | None"]]


def copies_asynchronously(source: str, tree: ast.Module, imports: Imports,
                          qualify: Callable[[ast.AST], str | None]) -> bool:
    """Whether the parsed file asks for an asynchronous copy (see the module's docstring).
    ``imports``: its import map (local name -> level, module, name); ``qualify``: the
    dotted name an expression stands for through those imports."""
    if any(level == 0 and (module.split(".", 1)[0] in ASYNC_COPYING_LIBRARIES
                           or f"{module}.{name}" in ASYNC_COPYING_CALLABLES)
           for level, module, name in imports.values()):
        return True
    if "non_blocking" not in source and not _POSITIONAL_TRUE.search(source) \
            and not any(name in source for name in _CALLABLE_NAMES):
        return False
    return any(_asks(node, qualify) for node in ast.walk(tree))


def text_copies_asynchronously(text: str) -> bool:
    """Whether code Python cannot parse asks for an asynchronous copy, by its text."""
    return bool(_ASKING_TEXT.search(text) or _LIBRARY_IMPORT.search(text))


def _asks(node: ast.AST, qualify: Callable[[ast.AST], str | None]) -> bool:
    if isinstance(node, ast.keyword):
        return node.arg == "non_blocking" and not _is_false(node.value)
    if isinstance(node, ast.Dict):
        return any(isinstance(key, ast.Constant) and key.value == "non_blocking" and not _is_false(value)
                   for key, value in zip(node.keys, node.values))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        places = _POSITIONAL_NON_BLOCKING.get(node.func.attr, ())
        return any(place < len(node.args) and _is_true(node.args[place]) for place in places)
    if isinstance(node, (ast.Attribute, ast.Name)) and (node.attr if isinstance(node, ast.Attribute) else node.id) \
            in _CALLABLE_NAMES:
        return qualify(node) in ASYNC_COPYING_CALLABLES
    return False


def _is_false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def _is_true(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def notebook_code(path: str) -> str:
    """The code cells of the notebook at ``path``, joined (nothing when it is unreadable): to
    be read as text (:func:`text_copies_asynchronously`), since a notebook's cells hold
    IPython lines that are no Python (``%time``, ``!pip``)."""
    try:
        document = json.loads(Path(path).read_bytes())
    except (OSError, ValueError, RecursionError):
        return ""
    if not isinstance(document, dict):
        return ""
    cells = document.get("cells")
    if not isinstance(cells, list):  # nbformat 3: the cells of each worksheet, sources in "input"
        worksheets = document.get("worksheets")
        cells = [cell for sheet in worksheets if isinstance(sheet, dict) for cell in sheet.get("cells") or ()] \
            if isinstance(worksheets, list) else []
    sources = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            source = cell.get("source", cell.get("input", ""))
            sources.append("".join(map(str, source)) if isinstance(source, list) else str(source))
    return "\n".join(sources)
