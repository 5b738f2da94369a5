"""The package version: one place, read by the CLI, the signatures and the build (pyproject).

Bump it whenever behaviour changes numbers, and say which in CHANGELOG.md.
"""

__version__ = "0.3.0"
