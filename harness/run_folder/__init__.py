"""The run folder: what ``grace run``, ``grace score``, ``grace report`` and ``grace spotcheck`` write.

Its owner, :class:`harness.run_folder.run_dir.RunDir`, builds every path (each name is spelled in ``file_names``)
and holds the one-writer lock; each file's records have a module of their own here (``run_records``,
``responses``, ``scores``, ``report``, ``batches``, ``spotcheck``, ``audit_log``, ``exports_log``), each its one
reader and writer.
"""
