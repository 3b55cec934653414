"""Dask graph builders, one module per pattern; they plan chunks, halos, carries and merges."""
