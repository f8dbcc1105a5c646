"""The ``grace`` command: one file per command group, loaded only when invoked."""
