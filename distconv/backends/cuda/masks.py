"""Constant-memory mask slots, shared safely by threads launching on one device.

kernels/convolve.cu declares DC_MASK_SLOTS slots per dtype. A mask already resident is reused
without a copy (every chunk of one filter uses the same mask); a new mask takes the least
recently used slot, after the device has drained the kernels that might still read it.
The lock is held from slot choice until the launch is queued.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict

import numpy as np

from . import loader

SYMBOLS = {np.dtype(np.float32): ("dc_mask_f32", "DC_MASK_F32"), np.dtype(np.float64): ("dc_mask_f64", "DC_MASK_F64")}


def capacity(dtype) -> int:
    """Taps one constant-memory slot holds for ``dtype`` (the kernel's DC_MASK_F32/F64)."""
    return loader.define(SYMBOLS[np.dtype(dtype)][1])


class MaskSlots:
    def __init__(self, module, dtype):
        self.module = module
        self.symbol = SYMBOLS[np.dtype(dtype)][0]
        self.capacity, self.slots = capacity(dtype), loader.define("DC_MASK_SLOTS")
        self.dtype = np.dtype(dtype)
        self.lock = threading.Lock()
        self.resident: OrderedDict[bytes, int] = OrderedDict()

    @contextlib.contextmanager
    def use(self, mask: np.ndarray):
        """Yield the slot holding ``mask`` (uploading it if needed); launch inside the block."""
        import cupy

        host = np.ascontiguousarray(mask, dtype=self.dtype).ravel()
        key = host.tobytes()
        with self.lock:
            slot = self.resident.get(key)
            if slot is None:
                if len(self.resident) < self.slots:
                    slot = len(self.resident)
                else:
                    _, slot = self.resident.popitem(last=False)
                    cupy.cuda.runtime.deviceSynchronize()  # kernels still reading the old mask
                ptr = self.module.get_global(self.symbol) + slot * self.capacity * self.dtype.itemsize
                ptr.copy_from_host(host.ctypes.data, host.nbytes)
                cupy.cuda.runtime.deviceSynchronize()  # the upload lands before any launch
            self.resident[key] = slot
            self.resident.move_to_end(key)
            yield slot


_slots: dict = {}
_slots_lock = threading.Lock()


def slots_for(module, dtype) -> MaskSlots:
    key = (id(module), np.dtype(dtype))
    with _slots_lock:
        if key not in _slots:
            _slots[key] = MaskSlots(module, dtype)
        return _slots[key]
