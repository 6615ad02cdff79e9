"""The package's version, in a module of its own.

Kept apart from ``spacy_ag/__init__.py`` so that the archive and checkpoint
headers (`archive`, `serialize`, `components.serialization`) can stamp the
version without importing the package face, which sits at the top layer
(docs/architecture.md). pyproject.toml reads the version from here too.
"""
__version__ = "0.1.0"
