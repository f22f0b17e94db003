"""Just-in-time build and load of the C++/CUDA GIoU kernels, with a cache.

Nothing here runs at import: the first call that needs a kernel for a device
type (or an explicit :func:`synclint.ops.load`) builds it with
``torch.utils.cpp_extension.load`` into a per-user cache directory keyed by a
hash of the sources, the torch/CUDA/Python versions and the flags, so later
processes only ``dlopen`` the finished library. A file lock serialises
concurrent first builds (processes killed mid-build release it). The CPU and
CUDA kernels are separate libraries: CPU-only users never wait for nvcc and a
failed CUDA build still leaves the CPU kernel.

If a build is impossible or fails, :func:`ensure_kernel` warns once per device
type and returns False; callers then use the pure-PyTorch reference.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
import sysconfig
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

from synclint.ops import _library  # noqa: F401  (the schemas the kernels implement)

__all__ = ["KernelUnavailableWarning", "ensure_kernel", "kernel_available", "load"]

#: Set to ``0`` to never build or load kernels (always use the reference).
ENV_DISABLE = "SYNCLINT_OPS_KERNELS"
#: Overrides the cache directory (default: ``$XDG_CACHE_HOME/synclint/ops``).
ENV_CACHE_DIR = "SYNCLINT_CACHE_DIR"
#: Overrides where the kernel sources are looked up.
ENV_SOURCE_DIR = "SYNCLINT_OPS_SOURCE_DIR"

_HEADERS = ("giou.h", "giou_host.h")
_SOURCES = {"cpu": ("giou.cpp",), "cuda": ("giou_cuda.cu",)}
# -fopenmp-simd honours the kernels' `omp simd` loops without linking OpenMP;
# -fno-trapping-math lets GCC if-convert (and so vectorise) the per-box math.
# Neither changes a result: the kernels never rely on floating-point traps.
_CFLAGS = ("/O2",) if os.name == "nt" else ("-O3", "-fopenmp-simd", "-fno-trapping-math")
_CUDA_CFLAGS = ("-O3",)

_state: dict[str, bool] = {}  # device type -> kernel loaded (False: gave up)
_errors: dict[str, str] = {}
_lock = threading.Lock()


class KernelUnavailableWarning(RuntimeWarning):
    """No compiled GIoU kernel could be loaded; the PyTorch reference is used."""


def source_dir() -> Path | None:
    """Directory holding ``giou.h`` and friends, or None if there is none.

    Looked up in ``$SYNCLINT_OPS_SOURCE_DIR``, then ``synclint/ops/csrc``
    (sources shipped as package data), then ``<repo>/cuda_ext`` (a checkout
    or editable install).
    """
    here = Path(__file__).resolve().parent
    candidates = [here / "csrc", here.parents[1] / "cuda_ext"]
    if os.environ.get(ENV_SOURCE_DIR):
        candidates.insert(0, Path(os.environ[ENV_SOURCE_DIR]))
    for candidate in candidates:
        if (candidate / _HEADERS[0]).is_file():
            return candidate
    return None


def cache_dir() -> Path:
    """Root of the build cache (created on demand)."""
    if os.environ.get(ENV_CACHE_DIR):
        return Path(os.environ[ENV_CACHE_DIR]).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("synclint", appauthor=False)) / "ops"


def _build_key(device_type: str, src: Path) -> str:
    """Hash of everything that makes a built library reusable."""
    digest = hashlib.sha256()
    for name in (*_HEADERS, *_SOURCES[device_type]):
        digest.update(name.encode())
        digest.update((src / name).read_bytes())
    flags = _CFLAGS + (_CUDA_CFLAGS if device_type == "cuda" else ())
    parts = (
        torch.__version__,
        str(torch.version.cuda),
        sysconfig.get_config_var("SOABI") or sys.version,
        " ".join(flags),
        os.environ.get("TORCH_CUDA_ARCH_LIST", "") if device_type == "cuda" else "",
    )
    digest.update("\0".join(parts).encode())
    return digest.hexdigest()[:16]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """Exclusive inter-process lock (``filelock``: every platform), released by the OS if the holder dies."""
    from filelock import FileLock

    with FileLock(str(path)):
        yield


def _build_and_load(device_type: str) -> None:
    """Load the cached library for ``device_type``, building it first if needed."""
    src = source_dir()
    if src is None:
        raise FileNotFoundError("the GIoU kernel sources (cuda_ext/) are not installed")
    name = f"synclint_giou_{device_type}_{_build_key(device_type, src)}"
    build_dir = cache_dir() / name
    build_dir.mkdir(parents=True, exist_ok=True)
    library = build_dir / f"{name}.so"
    done = build_dir / "complete"  # written only after a build finished
    with _file_lock(build_dir / "build.lock"):
        if done.exists() and library.exists():
            torch.ops.load_library(str(library))
            return
        from torch.utils import cpp_extension

        cpp_extension.load(
            name=name,
            sources=[str(src / s) for s in _SOURCES[device_type]],
            extra_cflags=list(_CFLAGS),
            extra_cuda_cflags=list(_CUDA_CFLAGS),
            extra_include_paths=[str(src)],
            build_directory=str(build_dir),
            with_cuda=device_type == "cuda",
            is_python_module=False,
            verbose=os.environ.get("SYNCLINT_OPS_VERBOSE") == "1",
        )
        done.touch()


def _unavailable_reason(device_type: str) -> str | None:
    if os.environ.get(ENV_DISABLE) == "0":
        return f"disabled by {ENV_DISABLE}=0"
    if device_type not in _SOURCES:
        return f"no GIoU kernel for device type {device_type!r}"
    if device_type == "cuda":
        from torch.utils import cpp_extension

        if torch.version.cuda is None or cpp_extension.CUDA_HOME is None:
            return "torch was built without CUDA or the CUDA toolkit is missing"
    return None


def ensure_kernel(device_type: str) -> bool:
    """True once the kernel for ``device_type`` is loaded (building it on first use).

    Never raises: on failure it warns once (unless disabled on purpose) and
    returns False, and the callers fall back to the reference.
    """
    if device_type in _state:
        return _state[device_type]
    with _lock:
        if device_type in _state:
            return _state[device_type]
        reason = _unavailable_reason(device_type)
        if reason is None:
            try:
                _build_and_load(device_type)
            except Exception as error:  # compiler missing, build error, bad cache...
                reason = f"building it failed: {type(error).__name__}: {error}"
        _state[device_type] = reason is None
        if reason is not None:
            _errors[device_type] = reason
            if os.environ.get(ENV_DISABLE) != "0":
                warnings.warn(
                    f"synclint.ops: no compiled GIoU kernel for {device_type!r} ({reason.strip()[:2000]}); "
                    "using the slower pure-PyTorch reference.",
                    KernelUnavailableWarning,
                    stacklevel=3,
                )
    return _state[device_type]


def kernel_available(device: str | torch.device = "cpu") -> bool:
    """Whether the compiled kernel for ``device`` is usable (builds it if needed)."""
    return ensure_kernel(torch.device(device).type)


def load(device: str | torch.device | None = None) -> bool:
    """Build/load kernels ahead of the first call (CPU, plus CUDA if present)."""
    if device is not None:
        return kernel_available(device)
    ok = ensure_kernel("cpu")
    if torch.cuda.is_available():
        ok = ensure_kernel("cuda") and ok
    return ok
