"""Kernel sources: shipped in the wheel, found from the tree, and compiled by nvcc without spills."""

import importlib
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from distconv.backends.cuda import loader

ROOT = Path(__file__).resolve().parents[1]
KERNEL_FILES = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.suffix in (".cu", ".cuh"))


# launcher modules whose kernels live in another pattern's source
LAUNCHED_FROM = {"terms": "convolve", "separable": "convolve"}


def launcher_modules():
    for pattern in loader.PATTERNS:
        if (ROOT / "kernels" / f"{pattern}.cu").exists():
            yield pattern, importlib.import_module(f"distconv.backends.cuda.{pattern}")


def test_every_pattern_source_inlines_common_header():
    for pattern, _ in launcher_modules():
        src = loader.source(pattern)
        assert "#include" not in src.replace("#include <", "")  # local headers inlined
        assert "struct DcTile" in src


def test_importing_distconv_imports_no_cupy():
    code = "import sys, distconv, distconv.ops.registry, distconv.batch, distconv.xarray; sys.exit('cupy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_wheel_contains_every_kernel_file(tmp_path):
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                          "-q", "-w", str(tmp_path), str(ROOT)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    (wheel,) = tmp_path.glob("distconv-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in KERNEL_FILES:
        assert f"distconv/kernels/{f}" in names, f


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("pattern, launcher", [(p, p) for p, _ in launcher_modules()] +
                         [(p, m) for m, p in LAUNCHED_FROM.items()])
def test_nvcc_compiles_every_instantiation_without_spills(tmp_path, pattern, launcher):
    mod = importlib.import_module(f"distconv.backends.cuda.{launcher}")
    refs = "\n".join(f"void *dc_ref_{i} = (void *)&{name};" for i, name in enumerate(mod.INSTANTIATIONS))
    src = tmp_path / f"{pattern}.cu"
    src.write_text(loader.source(pattern) + "\n" + refs + "\n")
    # --threads 0: the two architectures compile at once, one a core
    cmd = ["nvcc", "-std=c++17", "--threads", "0", "-c", str(src), "-o", str(tmp_path / "k.o"), "-Xptxas", "-v",
           "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-4000:]
    spills = [m for m in re.findall(r"(\d+) bytes spill stores", res.stderr) if m != "0"]
    assert not spills, f"register spills in {pattern}: {res.stderr[-4000:]}"
    assert len(re.findall(r"Compiling entry function", res.stderr)) >= len(mod.INSTANTIATIONS)


def test_python_and_cuda_share_each_number_once():
    """Boundary-mode codes live in core/modes.py (the floor below the backends) and in
    common.cuh: they must agree; every other shared number is read from the kernels."""
    from distconv.core.modes import MODES

    defs = loader.defines()
    assert {name: defs[f"DC_{name.upper()}"] for name in MODES} == MODES
    assert defs["DC_BLOCK"] == 256 and defs["DC_MASK_SLOTS"] >= 1
