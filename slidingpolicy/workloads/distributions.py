"""The embedded prompt/output length distributions of the two reference traces (ShareGPT and
arXiv summarization), read once from the packaged `length_tables.json`, which says where
they come from (`scripts/make_distributions.py` writes it)."""

from __future__ import annotations

from slidingpolicy.workloads.lengths import read_distributions

_PACKAGED = read_distributions()
SHAREGPT = _PACKAGED["sharegpt"]
ARXIV = _PACKAGED["arxiv"]
