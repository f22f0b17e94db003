"""Find the user line responsible for a sync: the first frame outside torch and synclint."""

from __future__ import annotations

import os
import sys
from importlib.util import find_spec
from types import FrameType

#: Files never blamed: the sync is always *called from* somewhere else.
_STDLIB_PLUMBING = ("runpy.py", "warnings.py", "contextlib.py", "threading.py")


def _package_dir(name: str) -> str | None:
    spec = find_spec(name)  # locates without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(os.path.realpath(next(iter(spec.submodule_search_locations))), "")


_INTERNAL_DIRS = tuple(d for d in (_package_dir("torch"), _package_dir("synclint")) if d)
_is_internal_cache: dict[str, bool] = {}


def is_internal(filename: str) -> bool:
    """True for torch, synclint, frozen modules and the stdlib plumbing that runs scripts."""
    cached = _is_internal_cache.get(filename)
    if cached is None:
        if filename.startswith("<") and filename != "<string>" and filename != "<stdin>":
            cached = True  # <frozen runpy>, <__array_function__ internals>
        else:
            real = os.path.realpath(filename)
            cached = real.startswith(_INTERNAL_DIRS) or (
                os.path.basename(real) in _STDLIB_PLUMBING
                and os.path.dirname(real) == os.path.dirname(os.__file__)
            )
        _is_internal_cache[filename] = cached
    return cached


_DATA_LOADING = os.path.join("torch", "utils", "data", "")


def in_data_loading(start: FrameType | None) -> bool:
    """True when a ``torch.utils.data`` frame is on the stack: samplers, fetchers and
    the datasets and collate functions they call run on host tensors (in loader
    workers when ``num_workers > 0``), so nothing there waits for a device."""
    frame = start
    while frame is not None:
        if _DATA_LOADING in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


_MODULE_FILE = os.path.join("torch", "nn", "modules", "module.py")


def in_module_move(start: FrameType | None) -> bool:
    """True inside ``nn.Module._apply`` (``model.to(device)``, ``.cuda()``, ``.half()``):
    moving a model's weights happens once, at setup, not in every step."""
    frame = start
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_apply" and code.co_filename.endswith(_MODULE_FILE):
            return True
        frame = frame.f_back
    return False


_DYNAMO_ENTRY = os.path.join("torch", "_dynamo", "eval_frame.py")


def in_compiled_region(start: FrameType | None) -> bool:
    """True under a ``torch.compile``-d function: there a sync is also a graph break
    (Dynamo's defaults: no ``capture_scalar_outputs``, no
    ``capture_dynamic_output_shape_ops``). Under synclint's modes Dynamo runs the
    function eagerly, so the compile wrapper frame is what tells."""
    frame = start
    while frame is not None:
        code = frame.f_code
        if code.co_name == "compile_wrapper" and code.co_filename.endswith(_DYNAMO_ENTRY):
            context = frame.f_locals.get("self")
            return type(context).__name__ == "OptimizeContext"
        frame = frame.f_back
    return False


def user_frame(start: FrameType | None = None) -> FrameType | None:
    """The innermost frame outside torch and synclint, from ``start`` (default: caller) outwards."""
    frame = start if start is not None else sys._getframe(1)
    while frame is not None and is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def user_location(start: FrameType | None = None) -> tuple[str, int, str]:
    """``(absolute path, line, function)`` of :func:`user_frame`; a placeholder when all is internal."""
    frame = user_frame(start if start is not None else sys._getframe(1))
    if frame is None:
        return ("<torch>", 0, "<internal>")
    return (absolute_path(frame.f_code.co_filename), frame.f_lineno, frame.f_code.co_name)


def absolute_path(filename: str) -> str:
    """Events keep absolute paths: the script may change directory while it runs."""
    return filename if filename.startswith("<") else os.path.abspath(filename)


def display_path(filename: str, root: str | None = None) -> str:
    """Relative to ``root`` (default: the working directory) when below it."""
    if filename.startswith("<"):
        return filename
    absolute = os.path.abspath(filename)
    try:
        relative = os.path.relpath(absolute, root)
    except ValueError:  # another drive on Windows
        return absolute
    return absolute if relative.startswith(os.pardir) else relative


def parse_profiler_frame(entry: str) -> tuple[str, int, str] | None:
    """Split a profiler stack entry ``path/to/file.py(12): name`` into its parts."""
    head, sep, function = entry.partition("): ")
    path, paren, line = head.rpartition("(")
    if not (sep and paren and line.isdigit()):
        return None
    return path, int(line), function
