"""A stand-in for PyTorch, built into a wheel by make_wheelhouse.py for gpuenv's image system test
(tests/dockerfile/image_build_test.cpp). No PyPI is reachable where the tests run, so this package takes the paths
a real torch takes that a generated Dockerfile must make work, and nothing else:

- import: maps cuBLAS and cuDNN from the nvidia-* wheels, searching LD_LIBRARY_PATH first as the loader does before
  torch's RUNPATH ($ORIGIN/../../nvidia/<lib>/lib), so the build check's /proc/self/maps test sees what it would;
- torch.compile on the CPU: the Inductor cache directory exactly as torch/_inductor/runtime/cache_dir_utils.py names
  it (TORCHINDUCTOR_CACHE_DIR, else <tmp>/torchinductor_<getpass.getuser()>, which raises for a uid without a
  passwd entry: pytorch/pytorch#140765), and a C++ kernel compiled there with $CXX or g++ (Inductor's cpp.cxx
  default in torch/_inductor/config.py) and loaded;
- torch.compile on CUDA: Triton's cache directory as triton/runtime/cache.py names it (TRITON_CACHE_DIR, else
  $TRITON_HOME or Path.home() + .triton/cache, and Path.home() needs HOME or a passwd entry) and a C launcher
  compiled there with $CC or gcc against Python.h, as triton/runtime/build.py does;
- torch.cuda.is_available(): libcuda.so.1 opened by name (the container toolkit mounts the driver's copy into a
  directory on the image's LD_LIBRARY_PATH), cuInit(0) and cuDeviceGetCount.

Tensors are flat lists of floats; the compiled kernels copy the eagerly computed result, so a wrong toolchain,
cache directory or user name fails the call while the arithmetic stays trivial.
"""

import ctypes
import getpass
import math
import os
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

__version__ = "@TORCH_VERSION@"


class version:
    cuda = "@CUDA_LINE@" or None


_SITE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_WHEEL_LIBRARIES = (("cublas", "libcublas.so.12"), ("cudnn", "libcudnn.so.9"))


def _loader_path(directory, soname):
    """Where the dynamic loader finds `soname` for a library whose RUNPATH is `directory`."""
    for entry in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if entry and os.path.exists(os.path.join(entry, soname)):
            return os.path.join(entry, soname)
    return os.path.join(directory, soname)


_mapped = [ctypes.CDLL(_loader_path(os.path.join(_SITE, "nvidia", sub, "lib"), name)) for sub, name in _WHEEL_LIBRARIES]


class backends:
    class cudnn:
        @staticmethod
        def version():
            return 91002


class cuda:
    @staticmethod
    def _driver():
        try:
            driver = ctypes.CDLL("libcuda.so.1")
        except OSError:
            return None
        return driver if driver.cuInit(0) == 0 else None

    @staticmethod
    def device_count():
        driver = cuda._driver()
        count = ctypes.c_int(0)
        if driver is None or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value

    @staticmethod
    def is_available():
        return cuda.device_count() > 0

    @staticmethod
    def synchronize():
        pass


def _check_device(device):
    if device not in ("cpu", "cuda"):
        raise RuntimeError("Expected one of cpu, cuda device type at start of device string: " + str(device))
    if device == "cuda" and not cuda.is_available():
        raise RuntimeError("Found no NVIDIA driver on your system.")


class Tensor:
    def __init__(self, values, rows, device):
        self.values = list(values)
        self.rows = rows  # 0: one dimension
        self.device = device

    def _map(self, fn):
        return Tensor([fn(v) for v in self.values], self.rows, self.device)

    def sin(self):
        return self._map(math.sin)

    def cos(self):
        return self._map(math.cos)

    def __add__(self, other):
        return Tensor([a + b for a, b in zip(self.values, other.values)], self.rows, self.device)

    def __matmul__(self, other):
        n = self.rows
        if n == 0 or other.rows != n or len(self.values) != n * n:
            raise RuntimeError("the stand-in multiplies square matrices only")
        out = [sum(self.values[i * n + k] * other.values[k * n + j] for k in range(n)) for i in range(n) for j in range(n)]
        return Tensor(out, n, self.device)


def _make(values, rows, device):
    _check_device(device)
    return Tensor(values, rows, device)


def randn(*shape, device="cpu"):
    count = shape[0] * (shape[1] if len(shape) > 1 else 1)
    return _make([random.gauss(0.0, 1.0) for _ in range(count)], shape[0] if len(shape) > 1 else 0, device)


def linspace(start, end, steps, device="cpu"):
    return _make([start + (end - start) * i / (steps - 1) for i in range(steps)], 0, device)


def sin(x):
    return x.sin()


def cos(x):
    return x.cos()


def allclose(a, b, atol=1e-8, rtol=1e-5):
    return len(a.values) == len(b.values) and all(
        abs(x - y) <= atol + rtol * abs(y) for x, y in zip(a.values, b.values))


def _inductor_cache_dir():
    # torch/_inductor/runtime/cache_dir_utils.py, cache_dir() and default_cache_dir().
    directory = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if directory is None:
        sanitized_username = re.sub(r'[\\/:*?"<>|]', "_", getpass.getuser())
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = directory = os.path.join(tempfile.gettempdir(),
                                                                         "torchinductor_" + sanitized_username)
    os.makedirs(directory, exist_ok=True)
    return directory


def _triton_cache_dir():
    # triton/runtime/cache.py, FileCacheManager: TRITON_CACHE_DIR or default_cache_dir().
    directory = os.getenv("TRITON_CACHE_DIR", "").strip() or os.path.join(os.getenv("TRITON_HOME", Path.home()),
                                                                           ".triton", "cache")
    os.makedirs(directory, exist_ok=True)
    return directory


_COPY_KERNEL = """%s
void kernel(const float* in, float* out, long n) { for (long i = 0; i < n; ++i) out[i] = in[i]; }
"""


def _build(compiler, source_text, suffix, directory, flags):
    directory = tempfile.mkdtemp(dir=directory)
    source = os.path.join(directory, "kernel" + suffix)
    with open(source, "w") as f:
        f.write(source_text)
    library = os.path.join(directory, "kernel.so")
    subprocess.run([compiler, "-shared", "-fPIC", "-O2", source, "-o", library] + flags, check=True)
    return ctypes.CDLL(library)


def _run_kernel(library, values):
    n = len(values)
    buffer_in = (ctypes.c_float * n)(*values)
    buffer_out = (ctypes.c_float * n)()
    library.kernel(buffer_in, buffer_out, ctypes.c_long(n))
    return list(buffer_out)


def compile(fn):
    if sys.version_info >= (3, 14) and __version__.startswith("2.9."):
        raise RuntimeError("torch.compile is not supported on Python 3.14+")

    def compiled(x):
        result = fn(x)
        if x.device == "cpu":
            library = _build(os.environ.get("CXX", "g++"), _COPY_KERNEL % 'extern "C"', ".cpp", _inductor_cache_dir(),
                             [])
        else:
            _inductor_cache_dir()
            compiler = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
            launcher = _COPY_KERNEL % "#include <Python.h>\n"
            library = _build(compiler, launcher, ".c", _triton_cache_dir(), ["-I" + sysconfig.get_paths()["include"]])
        return Tensor(_run_kernel(library, result.values), result.rows, result.device)

    return compiled
