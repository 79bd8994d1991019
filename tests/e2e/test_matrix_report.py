"""The README's client matrix is the one the recorded results generate (no hand edits, no
drift), and the generator says what it was given."""

from __future__ import annotations

import pytest

from tests.e2e import matrix_report
from tests.e2e.client_matrix import ADAPTERS, FAILED, NO_SUCH_CALL, PASSED, RESULTS, STEPS, TARGETS, load_results


def test_readme_matrix_is_generated_from_the_recorded_results():
    results = load_results(RESULTS)
    readme = matrix_report.README.read_text()
    assert matrix_report.replace_block(readme, matrix_report.render(results)) == readme, (
        "run python -m tests.e2e.matrix_report")


def test_recorded_results_cover_every_client_target_and_step():
    rows = load_results(RESULTS)["rows"]
    assert {(r["client"], r["target"], r["step"]) for r in rows} == {
        (a.name, t, s) for a in ADAPTERS for t, _ in TARGETS for s, _ in STEPS}
    assert {r["result"] for r in rows} <= {PASSED, FAILED, NO_SUCH_CALL}
    sent = load_results(RESULTS)["sent"]
    assert {(r["client"], r["target"]) for r in sent} == {(a.name, "standby") for a in ADAPTERS}
    # Bootstrapped from a controller, every client asks it at least ApiVersions and Metadata.
    assert all({"ApiVersions", "Metadata"} <= {x.split()[0] for x in r["requests"]} for r in sent)


def test_render_shows_each_result_and_replace_touches_only_the_block():
    rows = [{"client": "kcat", "version": "1.7.1", "target": "broker", "step": "bootstrap", "result": PASSED},
            {"client": "kcat", "version": "1.7.1", "target": "broker", "step": "list_topics", "result": FAILED},
            {"client": "kcat", "version": "1.7.1", "target": "broker", "step": "describe_configs",
             "result": NO_SUCH_CALL}]
    table = matrix_report.render({"rows": rows + [{**rows[0], "target": "standby"}], "sent": [
        {"client": "kcat", "target": "standby", "requests": ["Metadata v12", "ApiVersions v3"]}]})
    standby_line, line = [x for x in table.splitlines() if x.startswith("| kcat")]
    assert standby_line.rstrip(" |").endswith("Metadata v12, ApiVersions v3")
    cells = [c.strip() for c in line.strip("|").split("|")]
    labels = [label for _, label in STEPS]
    assert cells[:3] == ["kcat", "1.7.1", "simulated broker"]
    assert cells[3 + labels.index("bootstrap")] == PASSED
    assert cells[3 + labels.index("list topics")] == FAILED
    assert cells[3 + labels.index("describe configs")] == NO_SUCH_CALL
    assert cells[3 + labels.index("list brokers")] == "not run"
    assert cells[-1] == "-"  # versions are recorded for the standby rows only
    text = f"before\n{matrix_report.START}\nold table\n{matrix_report.END}\nafter\n"
    assert matrix_report.replace_block(text, "T") == f"before\n{matrix_report.START}\nT\n{matrix_report.END}\nafter\n"
    with pytest.raises(ValueError):
        matrix_report.replace_block("no markers", "T")
