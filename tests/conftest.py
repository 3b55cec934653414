import shutil
import subprocess

import pytest


def _listed_gpus() -> int:
    """GPUs the driver lists (nvidia-smi -L), whatever the Python stack can do with them."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(line.startswith("GPU ") for line in out.splitlines())


def _gpu_count() -> tuple[int, str | None]:
    """(GPUs cupy sees, why cupy fails where the driver lists GPUs)."""
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount(), None
    except Exception as e:  # noqa: BLE001 - without a listed GPU any failure means none
        return 0, f"{type(e).__name__}: {e}"


LISTED = _listed_gpus()
GPUS, BROKEN = _gpu_count()


def pytest_collection_modifyitems(config, items):
    need_gpu = pytest.mark.skip(reason="needs a CUDA GPU with cupy (nvidia-smi lists none)")
    need_two = pytest.mark.skip(reason="needs two CUDA GPUs with cupy and dask-cuda")
    for item in items:
        wants = 2 if "multi_gpu" in item.keywords else 1 if "gpu" in item.keywords else 0
        if not wants:
            continue
        if LISTED >= wants and GPUS < wants:
            # the machine has the GPUs but the stack does not work: fail loudly, never skip
            item.add_marker(pytest.mark.usefixtures("_gpu_stack_must_work"))
        elif GPUS < wants:
            item.add_marker(need_two if wants == 2 else need_gpu)


@pytest.fixture
def _gpu_stack_must_work():
    pytest.fail(f"nvidia-smi lists {LISTED} GPU(s) but cupy sees {GPUS}: {BROKEN}; install the GPU "
                "extra (make test installs cuda13 or cuda12) or fix the driver")


@pytest.fixture
def rng(request):
    """Fresh random inputs per test (seeded from the test's name, so failures reproduce)."""
    import zlib

    import numpy as np

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


class Backend:
    """One array kind an op's test runs on: ``to(a)`` turns a numpy input into it (dask: a
    random chunking, thin chunks included; cupy: device memory poisoned first, so an element a
    kernel fails to write shows up). Every op family's tests take it: the ``backend`` fixture
    runs a test on each kind, ``gpu`` on cupy alone."""

    def __init__(self, name: str, rng):
        self.name, self.rng = name, rng

    @property
    def gpu(self) -> bool:
        return "cupy" in self.name

    @property
    def lazy(self) -> bool:
        """Whether an op returns a dask array here."""
        return self.name.startswith("dask")

    def to(self, a, nbytes: int | None = None):
        import numpy as np

        if self.gpu:
            import cupy

            from .helpers import poison_gpu_pool

            poison_gpu_pool(nbytes or max(a.nbytes * 4, 1 << 20))
            a = cupy.asarray(a)
        if self.lazy:
            import dask.array as da

            chunks = tuple(int(self.rng.integers(1, s + 1)) for s in np.shape(a))
            return da.from_array(a, chunks=chunks, asarray=False)
        return a

    def run(self, fn, *arrays, nbytes: int | None = None, **kw):
        """``fn`` on every array turned into this kind (thin random chunks merge with a warning,
        which is not what these tests check)."""
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*[self.to(a, nbytes) for a in arrays], **kw)

    def both(self, fn, *arrays, nbytes: int | None = None, **kw):
        """(``fn`` on this kind, ``fn`` on the numpy arrays themselves): the numpy path is the
        reference a GPU or chunked path must equal."""
        return self.run(fn, *arrays, nbytes=nbytes, **kw), fn(*arrays, **kw)


@pytest.fixture(params=["numpy", "dask", pytest.param("cupy", marks=pytest.mark.gpu),
                        pytest.param("dask-cupy", marks=pytest.mark.gpu)])
def backend(request, rng):
    """Runs a test on numpy, dask, and where a GPU is present cupy and dask-of-cupy arrays."""
    return Backend(request.param, rng)


@pytest.fixture
def gpu(rng):
    """The cupy kind alone, for the GPU paths' own tests (tests/gpu)."""
    return Backend("cupy", rng)
