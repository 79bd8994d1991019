"""The chaos suite (DESIGN.md section 7, "The chaos suite"): real processes under a nemesis.

``python -m tests.chaos --duration 300 --seed 7`` (or ``make chaos DURATION=300 SEED=7``) runs
one schedule and prints its figures last; ``tests/chaos/test_chaos.py`` is CI's 5-minute run.
"""
