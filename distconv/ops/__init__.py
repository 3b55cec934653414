"""The public ops, one module per family, and the registry that lists them once for the
package's namespace, both xarray accessors and workflow steps."""
