"""grace's tests, a package: ``tests.conftest`` and the shared builders stay ours even where a dependency
ships a top-level ``tests`` package of its own (ppi_python does)."""
