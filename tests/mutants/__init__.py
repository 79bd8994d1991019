"""Planted controller bugs (issue 25 item 5): one small patch per bug, each of which the fast
suites must catch. ``python -m tests.mutants`` (``make mutants``) runs them; see runner.py."""
