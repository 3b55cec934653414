"""python -m benchmarks [--only conv,filters,scan,hist,kmeans] [--out benchmarks/results]"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from . import harness


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks")
    p.add_argument("--only", default="conv,filters,scan,hist,kmeans")
    p.add_argument("--out", default=str(Path(__file__).parent / "results"))
    p.add_argument("--repeat", type=int, default=20)
    args = p.parse_args(argv)
    try:
        import cupy
        import cupyx.scipy.ndimage as cpx
    except ImportError:
        print("benchmarks need a GPU with cupy", file=sys.stderr)
        return 2
    from .kernels_rows import GROUPS

    copy = harness.copy_GBps()

    def timeit(fn, repeat=args.repeat):
        return harness.median_ms(fn, repeat=repeat)

    rows = []
    for g in args.only.split(","):
        try:
            rows += GROUPS[g](copy, timeit, cupy, cpx)
        except Exception:  # noqa: BLE001 - one broken group must not hide the others' numbers
            traceback.print_exc()
        cupy.get_default_memory_pool().free_all_blocks()
        print(harness.table(rows, copy), flush=True)
    path = harness.write(rows, copy, Path(args.out))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
