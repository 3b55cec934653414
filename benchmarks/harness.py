"""Timing, the copy baseline, rows and the results file (PERF.md's format)."""

from __future__ import annotations

import datetime
import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

GiB = 2**30


@dataclass
class Row:
    case: str
    layer: str
    gpus: int
    ms: float
    GBps: float
    pct_copy: float
    anchor: str | None
    anchor_ms: float | None
    speedup: float | None
    efficiency: float | None = None
    halo_overhead: float | None = None
    checked: bool = False
    note: str = ""


def median_ms(fn, repeat: int = 20, warmup: int = 3) -> float:
    """Median GPU time (CUDA events) of fn() over ``repeat`` runs after ``warmup``."""
    from cupyx.profiler import benchmark

    res = benchmark(fn, n_repeat=repeat, n_warmup=warmup)
    import numpy as np

    return float(np.median(res.gpu_times[0]) * 1e3)


def copy_GBps() -> float:
    import cupy

    src = cupy.random.random(GiB // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    ms = median_ms(lambda: cupy.copyto(dst, src))
    return 2 * src.nbytes / ms / 1e6


def row(case, layer, nbytes, ms, copy, anchor=None, anchor_ms=None, checked=False, gpus=1, note="", **kw) -> Row:
    gbps = nbytes / ms / 1e6
    return Row(case, layer, gpus, round(ms, 4), round(gbps, 1), round(100 * gbps / copy, 1), anchor,
               None if anchor_ms is None else round(anchor_ms, 4),
               None if anchor_ms is None else round(anchor_ms / ms, 2), checked=bool(checked), note=note, **kw)


def device_name() -> str:
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()


def commit() -> str:
    """The measured commit: $DISTCONV_COMMIT (a device copy has no .git), else git's HEAD."""
    import os

    if os.environ.get("DISTCONV_COMMIT"):
        return os.environ["DISTCONV_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def write(rows: list[Row], copy: float, out_dir: Path, gpus: int = 1, suffix: str = "") -> Path:
    name = device_name()
    date = datetime.date.today().isoformat()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name.replace(' ', '-')}-{date}{suffix}.json"
    doc = {"device": name, "gpus": gpus, "date": date, "commit": commit(), "copy_GBps": round(copy, 1),
           "rows": [asdict(r) for r in rows]}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def write_variants(out_dir: Path, kind: str, copy: float, variants: dict, rows: dict) -> Path:
    """A diagnosis table (ms and % of copy per row and variant; ``variants``: name -> its
    compile switches) as ``<device>-<kind>-variants.json``; outputs are checked by the rows
    run, not here."""
    name = device_name()
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name.replace(' ', '-')}-{kind}-variants.json"
    doc = {"device": name, "commit": commit(), "copy_GBps": round(copy, 1),
           "variants": {k: list(v) for k, v in variants.items()}, "rows": rows}
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return path


def table(rows: list[Row], copy: float) -> str:
    head = f"{'case':<18}{'ms':>9}{'GB/s':>9}{'%copy':>7}{'anchor ms':>11}{'speedup':>9}{'eff':>6}{'halo':>6}  ok  anchor"
    lines = [f"copy baseline: {copy:.1f} GB/s", head]
    for r in rows:
        lines.append(f"{r.case:<18}{r.ms:>9.3f}{r.GBps:>9.1f}{r.pct_copy:>7.1f}"
                     f"{'' if r.anchor_ms is None else f'{r.anchor_ms:.3f}':>11}"
                     f"{'' if r.speedup is None else f'{r.speedup:.2f}':>9}"
                     f"{'' if r.efficiency is None else f'{r.efficiency:.2f}':>6}"
                     f"{'' if r.halo_overhead is None else f'{r.halo_overhead:.2f}':>6}"
                     f"  {'y' if r.checked else '-'}   {r.anchor or ''} {r.note}")
    return "\n".join(lines)
