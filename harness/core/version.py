"""The one place grace's version is spelled; every record grace writes carries it."""

__version__ = "0.1.0"
