"""Oracles (cvxpy/HiGHS MILPs, exhaustive scans) for every optimality claim, and written proofs.

Each `*_oracle` module is importable and typed; the `test_*` modules run them on
hypothesis-generated small cases; `python -m proofs.report` regenerates proofs/README.md.
"""
