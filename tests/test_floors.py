"""The house rules that a test can check: rooms import only downward and no module imports one
that imports it back, the two backends offer the same per-block functions, and the registry is
the public namespace."""

import ast
import inspect
from pathlib import Path

import pytest

import distconv
from distconv import backends
from distconv.ops.registry import OPS

PKG = Path(distconv.__file__).parent
# Rooms, lowest first: a module imports its own room or the ones below it, never a higher one,
# and no module imports another that imports it back (at any depth, inside one room too).
# Function-level imports count, and so does an import by name (a string naming one of our
# submodules: importlib, a preload list, `python -m`). The face is three rooms: the CLI on top,
# imported by nothing; __init__ and the accessor; and below them the sessions room
# (distconv/session/: cluster config, kept cluster, warm process, the run command's body).
ROOMS = ["core", "backends", "graph", "engine", "ops", "batch", "session", "face", "cli"]
FACE = {"distconv": "face", "distconv.xarray": "face", "distconv.cli": "cli"}


def room(module: str) -> str | None:
    """The room of a module of ours (None: a module that belongs to no room)."""
    if module in FACE:
        return FACE[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in ROOMS[:7] else None


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        yield name, path


MODULES = dict(_modules())


def _imports(name: str, path: Path):
    """The modules of ours that ``name`` imports: every import statement (at any depth of the
    file), each string that names one of our modules; its own name left out."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if _ours(target):
                # `from package import module` imports the module; `from module import name`, the module
                found |= {f"{target}.{a.name}" if f"{target}.{a.name}" in MODULES else target for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if _ours(a.name)}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and "." in node.value \
                and node.value in MODULES:  # a module by name ("distconv" alone is the distribution too)
            found.add(node.value)
    found.discard(name)
    return sorted(found)


def _ours(module: str) -> bool:
    return module == "distconv" or module.startswith("distconv.")


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_rooms_import_only_downward(name):
    mine = room(name)
    assert mine is not None, f"{name} belongs to no room: place it in ROOMS (tests/test_floors.py)"
    for target in GRAPH[name]:
        theirs = room(target)
        assert theirs is not None and ROOMS.index(theirs) <= ROOMS.index(mine), \
            f"{name} ({mine}) imports {target} ({theirs}), a higher room"
        assert target != "distconv.cli", f"{name} imports the CLI: nothing does"
        if name.startswith("distconv.backends."):
            for a, b in (("numpy", "cuda"), ("cuda", "numpy")):
                assert not (name.startswith(f"distconv.backends.{a}") and target.startswith(f"distconv.backends.{b}")), \
                    f"{name} imports the other backend {target}"


def test_no_module_imports_one_that_imports_it_back():
    knots = [f"{' -> '.join(cycle)}   (the knot: {', '.join(sorted(knot))})" for knot, cycle in _knots(GRAPH)]
    assert not knots, "import cycles between modules:\n  " + "\n  ".join(knots)


def _knots(graph: dict) -> list[tuple[set, list[str]]]:
    """Each knot (modules that all reach each other through imports: a strongly connected
    component of more than one) with a shortest cycle through its first module, a -> ... -> a."""
    index, low, stack, on, knots = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            knot = set()
            while True:
                w = stack.pop()
                on.discard(w)
                knot.add(w)
                if w == v:
                    break
            if len(knot) > 1:
                knots.append(knot)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = []
    for knot in knots:
        start = min(knot)
        paths, seen = [[start]], {start}  # breadth first: the shortest way back to start
        while paths:
            path = paths.pop(0)
            nxt = [w for w in graph[path[-1]] if w in knot]
            if start in nxt:
                found.append((knot, path + [start]))
                break
            for w in nxt:
                if w not in seen:
                    seen.add(w)
                    paths.append(path + [w])
    return sorted(found, key=lambda kc: len(kc[1]))


def test_importing_distconv_stays_light():
    """`import distconv` (the CLI's first import, and a handed run's) loads no dask.array,
    xarray, zarr or cupy: the ops load on first use."""
    import subprocess
    import sys

    heavy = ("dask.array", "xarray", "zarr", "cupy")
    code = f"import sys, distconv, distconv.cli; print([m for m in {heavy!r} if m in sys.modules])"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and res.stdout.strip() == "[]", res.stdout + res.stderr


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


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.split(".")[:2] == ["distconv", "engine"]))
def test_the_engine_reaches_the_device_only_through_its_device_object(name):
    """No module of engine/ imports cupy or backends.cuda, at any depth of the file: the GPU is
    backends.device's ``Cuda`` (the CPUs its ``Host``)."""
    cuda = [t for t in GRAPH[name] if t == "distconv.backends.cuda" or t.startswith("distconv.backends.cuda.")]
    assert not cuda, f"{name} imports {cuda}: reach the GPU through backends.device"
    tops = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            tops |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            tops.add(node.module.split(".")[0])
    assert not tops & {"cupy", "cupyx"}, f"{name} imports cupy: reach the GPU through backends.device"
