"""Just-in-time build and load of the C++/CUDA GIoU kernels, with a cache.

Nothing here runs at import: the first call that needs a kernel for a device
type (or an explicit :func:`synclint.ops.load`) builds it with
``torch.utils.cpp_extension.load`` into a per-user cache directory keyed by a
hash of the sources, the torch/CUDA/Python versions, the flags and (for CUDA)
the GPUs' compute capabilities, so later processes only ``dlopen`` the
finished library. A file lock serialises
concurrent first builds (processes killed mid-build release it). The CPU and
CUDA kernels are separate libraries: CPU-only users never wait for nvcc and a
failed CUDA build still leaves the CPU kernel.

The CPU kernel is built with OpenMP when the compiler supports it (probed
with a tiny program first), so ``at::parallel_for`` really runs on
``torch.get_num_threads()`` threads of torch's own OpenMP runtime; otherwise
it is built serial.

If a build is impossible or fails, or a freshly loaded CUDA kernel cannot run
on this GPU, :func:`ensure_kernel` warns once per device type and returns
False; callers then use the pure-PyTorch reference.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

from synclint.ops import _library

__all__ = ["KernelUnavailableWarning", "ensure_kernel", "kernel_available", "load"]

#: Set to ``0`` to never build or load kernels (always use the reference).
ENV_DISABLE = "SYNCLINT_OPS_KERNELS"
#: Overrides the cache directory (default: ``$XDG_CACHE_HOME/synclint/ops``).
ENV_CACHE_DIR = "SYNCLINT_CACHE_DIR"
#: Overrides where the kernel sources are looked up.
ENV_SOURCE_DIR = "SYNCLINT_OPS_SOURCE_DIR"

_HEADERS = ("giou.h", "giou_host.h")
_SOURCES = {"cpu": ("giou.cpp", "giou_eager.cpp"), "cuda": ("giou_cuda.cu",)}
# -fopenmp-simd honours the kernels' `omp simd` loops without linking OpenMP;
# -fno-trapping-math lets GCC if-convert (and so vectorise) the per-box math.
# Neither changes a result: the kernels never rely on floating-point traps.
_CFLAGS = ("/O2",) if os.name == "nt" else ("-O3", "-fopenmp-simd", "-fno-trapping-math")
_OPENMP_FLAGS = ("-fopenmp",)
_CUDA_CFLAGS = ("-O3",)

_OPENMP_PROBE = """
#include <omp.h>
int main() {
  int threads = 0;
#pragma omp parallel reduction(+ : threads)
  threads += 1;
  return threads > 0 ? 0 : 1;
}
"""

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


@functools.cache
def openmp_flags() -> tuple[str, ...]:
    """``-fopenmp`` if the C++ compiler builds and links an OpenMP program, else ().

    Without OpenMP, ATen's ``parallel_for`` in the kernel compiles to a serial
    loop. The object links against ``libgomp.so.1``, the soname of the copy
    torch ships and has already loaded, so the kernel shares torch's thread
    pool and obeys ``torch.set_num_threads``.
    """
    if os.name == "nt" or os.environ.get("SYNCLINT_OPS_OPENMP") == "0":
        return ()
    compiler = os.environ.get("CXX", "c++")
    if shutil.which(compiler) is None:
        return ()
    with tempfile.TemporaryDirectory(prefix="synclint-omp-") as tmp:
        source = Path(tmp) / "probe.cpp"
        source.write_text(_OPENMP_PROBE)
        try:
            result = subprocess.run(
                [compiler, *_OPENMP_FLAGS, str(source), "-o", str(Path(tmp) / "probe")],
                capture_output=True,
                timeout=120,
            )
        except (OSError, subprocess.SubprocessError):
            return ()
    return _OPENMP_FLAGS if result.returncode == 0 else ()


def cpu_flags() -> tuple[str, ...]:
    return _CFLAGS + openmp_flags()


def link_flags() -> tuple[str, ...]:
    return openmp_flags() + shared_runtime_flags()


def shared_runtime_flags() -> tuple[str, ...]:
    """The C++ runtime library torch already runs on, named on the link line (Linux).

    A compiler configured to link its standard library statically (the GPU
    machine's ``/opt/gcc`` g++ 13.3 is: its kernels had no ``libstdc++.so.6``
    among their needed libraries) puts a second ``libstdc++`` inside the kernel
    library. The two copies share no stream or exception state: a ``TORCH_CHECK``
    message that c10 formats into a stream of the other copy came out cut short
    (``"giou_loss: pred ["``) with a static build here, and the same throw
    segfaulted the process there. Naming the copy this process has loaded makes the
    linker take every standard-library symbol from it, so the static archive the
    driver appends supplies nothing.
    """
    if not sys.platform.startswith("linux"):
        return ()
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            paths = {line.split(maxsplit=5)[-1].strip() for line in maps if "libstdc++.so" in line}
    except OSError:
        return ()
    loaded = sorted(path for path in paths if os.path.basename(path).startswith("libstdc++.so") and os.path.exists(path))
    return (loaded[0],) if loaded else ()


def cuda_capabilities() -> str:
    """The visible GPUs' compute capabilities, e.g. ``"8.9,9.0"`` ("" without CUDA).

    With ``TORCH_CUDA_ARCH_LIST`` unset, ``cpp_extension`` compiles for exactly
    these, so a cache built on one GPU must not be reused on another.
    """
    if not torch.cuda.is_available():
        return ""
    found = {torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())}
    return ",".join(f"{major}.{minor}" for major, minor in sorted(found))


def _build_key(device_type: str, src: Path) -> str:
    """Hash of everything that makes a built library reusable."""
    digest = hashlib.sha256()
    for name in (*_HEADERS, *_SOURCES[device_type]):
        digest.update(name.encode())
        digest.update((src / name).read_bytes())
    flags = cpu_flags() + link_flags() + (_CUDA_CFLAGS if device_type == "cuda" else ())
    if device_type == "cuda":
        arch = os.environ.get("TORCH_CUDA_ARCH_LIST") or f"visible:{cuda_capabilities()}"
    else:
        arch = ""
    parts = (
        torch.__version__,
        str(torch.version.cuda),
        str(getattr(torch.version, "git_version", "")),
        sysconfig.get_config_var("SOABI") or sys.version,
        " ".join(flags),
        arch,
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

        # ``cpp_extension.load`` holds a baton file, ``lock``, that only its own ``finally``
        # removes: a build killed by a signal (SIGTERM, SIGKILL) leaves it behind, and the
        # next load would wait for it forever. Under our lock no other build of this
        # directory runs, so a baton here is stale.
        (build_dir / "lock").unlink(missing_ok=True)
        cpp_extension.load(
            name=name,
            sources=[str(src / s) for s in _SOURCES[device_type]],
            extra_cflags=list(cpu_flags()),
            extra_ldflags=list(link_flags()),
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
                _library.ensure_registered()  # the schemas the kernels implement
                _build_and_load(device_type)
            except Exception as error:  # compiler missing, build error, bad cache...
                reason = f"building it failed: {type(error).__name__}: {error}"
        if reason is None and device_type == "cuda":
            reason = _cuda_smoke_test()
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


def _cuda_smoke_test() -> str | None:
    """Why the loaded CUDA kernel cannot run here (e.g. built for another GPU), or None.

    Runs one tiny forward and waits for it: a one-time synchronisation at load
    time, so that "no kernel image is available" becomes a fallback instead
    of an error in the training step.
    """
    try:
        boxes = torch.tensor([[[0.0, 0.0, 1.0, 1.0]]], device="cuda")
        loss, _ = torch.ops.synclint.giou_loss_forward(boxes, boxes, None, None, "mean", 1e-7)
        torch.cuda.synchronize()
        if abs(float(loss)) > 1e-5:
            return f"the CUDA kernel gave {float(loss)} for identical boxes (expected 0)"
    except Exception as error:  # noqa: BLE001  (a CUDA error of any kind)
        return f"the CUDA kernel does not run on this GPU: {type(error).__name__}: {error}"
    return None


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
