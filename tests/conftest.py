import pytest


def _gpu_count() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # noqa: BLE001 - no cupy, no driver, no device: all mean zero GPUs
        return 0


GPUS = _gpu_count()


def pytest_collection_modifyitems(config, items):
    need_gpu = pytest.mark.skip(reason="needs a CUDA GPU with cupy")
    need_two = pytest.mark.skip(reason="needs two CUDA GPUs with cupy and dask-cuda")
    for item in items:
        if "multi_gpu" in item.keywords and GPUS < 2:
            item.add_marker(need_two)
        elif "gpu" in item.keywords and GPUS < 1:
            item.add_marker(need_gpu)


@pytest.fixture
def rng(request):
    """Fresh random inputs per test (seeded from the test's name, so failures reproduce)."""
    import zlib

    import numpy as np

    return np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


class Backend:
    """One array kind an op's test runs on: ``to(a)`` turns a numpy input into it (dask: a
    random chunking, thin chunks included; cupy: device memory poisoned first, so an element a
    kernel fails to write shows up)."""

    def __init__(self, name: str, rng):
        self.name, self.rng = name, rng

    @property
    def gpu(self) -> bool:
        return "cupy" in self.name

    def to(self, a):
        import numpy as np

        if self.gpu:
            import cupy

            from .helpers import poison_gpu_pool

            poison_gpu_pool(max(a.nbytes * 4, 1 << 20))
            a = cupy.asarray(a)
        if self.name.startswith("dask"):
            import dask.array as da

            chunks = tuple(int(self.rng.integers(1, s + 1)) for s in np.shape(a))
            return da.from_array(a, chunks=chunks, asarray=False)
        return a


@pytest.fixture(params=["numpy", "dask", pytest.param("cupy", marks=pytest.mark.gpu),
                        pytest.param("dask-cupy", marks=pytest.mark.gpu)])
def backend(request, rng):
    """Runs a test on numpy, dask, and where a GPU is present cupy and dask-of-cupy arrays."""
    return Backend(request.param, rng)
