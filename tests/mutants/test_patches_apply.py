"""Every planted bug still applies to the code as it is: a refactor that moves a mutant's lines
makes ``make mutants`` report it "not-applied" (a mutant that can no longer die), and ``make
test`` should say so on the same change, not the next ``make mutants`` run. Seconds."""

from __future__ import annotations

import pytest

from tests.mutants import runner


@pytest.mark.parametrize("mutant", runner.load([]), ids=lambda m: m.name)
def test_the_patch_applies_to_the_working_tree(mutant):
    # git apply --check against the checkout's files (a fresh clone's are HEAD's).
    assert runner.apply(runner.REPO, mutant.path, check_only=True) is None


def test_a_patch_whose_context_moved_is_reported(tmp_path):
    stale = tmp_path / "99-stale.patch"
    stale.write_text(
        "# suite: tests\n--- a/controller/core/reassignment.py\n+++ b/controller/core/reassignment.py\n"
        "@@ -1,2 +1,2 @@\n-no such line\n+another\n context that is not there\n"
    )
    assert runner.apply(runner.REPO, stale, check_only=True)
