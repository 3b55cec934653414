"""The benchmark table of ../shared/PERF.md: `python -m benchmarks` on a GPU machine."""
