"""The ground floor: array kinds, Tile, boundary modes, op functors, argument checks.

Imports nothing else of distconv; every floor above may import it.
"""
