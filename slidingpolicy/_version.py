"""The package's version, read by pyproject.toml (setuptools' dynamic version) and exported as
`slidingpolicy.__version__`; CITATION.cff and CHANGELOG.md name the same."""

__version__ = "0.1.0"
