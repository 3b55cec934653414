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
