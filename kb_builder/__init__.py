"""grace's knowledge-base layer: documents -> self-contained articles -> searchable KB.

Everything else in grace (the harness, the scorer, the annotation app) reads a KB
through :func:`kb_builder.loader.load_kb`, so the on-disk contract lives here.
"""
