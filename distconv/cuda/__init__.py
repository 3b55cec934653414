"""CUDA plumbing: kernel sources, compilation, constant-memory slots, launch structs.

Nothing here imports cupy at import time; it is imported on the worker when a cupy block runs.
"""
