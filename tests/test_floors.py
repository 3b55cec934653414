"""The house rules that a test can check: floors import only downward, the two backends offer
the same per-block functions, and the registry is the public namespace."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import distconv
from distconv import backends
from distconv.ops.registry import OPS

PKG = Path(distconv.__file__).parent
# lowest first; a module may import its own floor or any floor below it
FLOORS = ["core", "backends", "graph", "engine", "ops", "batch", "face"]


def floor(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FLOORS else "face"


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        yield name, path


def _imports(name: str, path: Path):
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("distconv"):
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    yield sub if importlib.util.find_spec(sub.split(".")[0]) and _is_module(sub) else target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("distconv"):
                    yield alias.name


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@pytest.mark.parametrize("name, path", list(_modules()), ids=lambda v: str(v) if isinstance(v, str) else "")
def test_floors_import_only_downward(name, path):
    mine = FLOORS.index(floor(name))
    for target in _imports(name, path):
        assert FLOORS.index(floor(target)) <= mine, f"{name} ({floor(name)}) imports {target} ({floor(target)})"
        if name.startswith("distconv.backends."):
            for a, b in (("numpy", "cuda"), ("cuda", "numpy")):
                assert not (name.startswith(f"distconv.backends.{a}") and target.startswith(f"distconv.backends.{b}")), \
                    f"{name} imports the other backend {target}"


@pytest.mark.parametrize("family", sorted(backends.FAMILIES))
def test_both_backends_offer_each_function_with_one_signature(family):
    for fn in backends.FAMILIES[family]:
        cpu = inspect.signature(backends.implementation(family, fn, "numpy"))
        gpu = inspect.signature(backends.implementation(family, fn, "cuda"))
        cpu_params, gpu_params = list(cpu.parameters), list(gpu.parameters)
        # the GPU side may add keyword options with defaults (e.g. a kernel variant), never lack one
        assert gpu_params[:len(cpu_params)] == cpu_params, (family, fn, cpu, gpu)
        assert all(gpu.parameters[p].default is not inspect.Parameter.empty for p in gpu_params[len(cpu_params):])


def test_registry_is_the_public_namespace_and_feeds_both_accessors():
    import xarray as xr

    for name, op in OPS.items():
        assert getattr(distconv, name) is op.func
        if op.named is not None:
            da = xr.DataArray([[1.0]], dims=("y", "x"))
            assert callable(getattr(da.distconv, name)) and callable(getattr(da.to_dataset(name="v").distconv, name))
    assert {"correlate1d", "convolve1d", "histogram"} <= {n for n, op in OPS.items() if op.named}
