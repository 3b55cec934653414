"""The CPU backend: scipy.ndimage / numpy per block. It is also the oracle every GPU path is
tested against."""
