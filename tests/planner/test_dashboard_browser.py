"""The planner dashboard in a real browser: headless Chromium (Debian's) through selenium loads
``/`` from a real `reassignd planner serve` on simulated brokers, with a controller to execute,
and checks what a person would check: the brokers listed, the proposal's move count the one
``/proposals`` answers, an execution started from the page (behind its confirmation) whose
progress advances while it runs, and a phone-sized window with nothing cut off. Screenshots are
kept as test artifacts (``artifacts/dashboard-*.png`` at the repository's root; README shows one).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.browser.chromium import chromium
from tests.e2e.processes import REPO, wait_for
from tests.planner.service_http import http, served_cluster

pytestmark = [pytest.mark.zk, pytest.mark.e2e]

ARTIFACTS = REPO / "artifacts"
# Brokers 1-3 hold two topics, broker 4 is new and empty: the proposal moves a third of the
# replicas onto it, each 4 MiB copied at 1 MiB/s into broker 4, so the execution runs for
# seconds and its progress can be watched.
SIM = ["--brokers", "4", "--topics", "orders:9:2:4MiB", "audit:3:2:1MiB", "--topic-brokers", "1,2,3",
       "--bandwidth", "1MiB", "--produce-rate", "0"]


@pytest.fixture(scope="module")
def service(zk_server, _zk_admin, tmp_path_factory):
    work: Path = tmp_path_factory.mktemp("dashboard")
    with served_cluster(zk_server, _zk_admin, work, SIM,
                        ["--insecure-no-auth", "--sizes-interval", "1", "--session-timeout", "4"], prefix="dash",
                        controller_config='zk_session_timeout_s = 4.0\nrequest_timeout_s = 5.0\n') as c:
        base = c["base"]
        wait_for(lambda: all(b["bytes"] > 0 for b in http(base, "GET", "/load")[1]["brokers"][:3]), 30,
                 "replica sizes in /load")
        yield {"base": base, "work": work}


def _text(browser, element_id: str) -> str:
    return browser.find_element("id", element_id).text.strip()


def _shot(browser, name: str) -> Path:
    """The whole page, from its top, as ``artifacts/dashboard-NAME.png``."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"dashboard-{name}.png"
    size = browser.get_window_size()
    browser.execute_script("window.scrollTo(0, 0)")
    browser.set_window_size(size["width"], browser.execute_script("return document.body.scrollHeight") + 140)
    browser.save_screenshot(str(path))
    browser.set_window_size(size["width"], size["height"])
    return path


@pytest.mark.timeout(300)
def test_dashboard_shows_the_cluster_the_proposal_and_a_live_execution(service):
    base, work = service["base"], service["work"]
    state = http(base, "GET", "/state")[1]
    with chromium(work, width=1280, height=1000) as browser:
        browser.get(base + "/")
        # The brokers, as /state lists them.
        listed = "return [...document.querySelectorAll('#brokers tbody tr')].map(r => Number(r.dataset.broker))"
        rows = wait_for(lambda: browser.execute_script(listed) or None, 30, "the brokers table")
        assert rows == state["model"]["brokers"] == [1, 2, 3, 4]
        # The proposal's moves: the number /proposals gives, against its lower bound.
        wait_for(lambda: _text(browser, "proposal-moves").isdigit() or None, 60, "the proposal on the page")
        proposal = http(base, "GET", "/proposals")[1]
        report = proposal["report"]
        assert report["moves"] > 0
        assert int(_text(browser, "proposal-moves")) == report["moves"]
        assert int(_text(browser, "proposal-lower-bound")) == report["lower_bound"]
        assert int(_text(browser, "proposal-id")) == proposal["proposal_id"]
        # Broker 4 (new, empty) with its bars after the proposal (the table is drawn again as data
        # arrives: read it again, as one whole, in the page).
        after_bars = browser.execute_script(
            "return [...document.querySelectorAll('#brokers tbody tr')].map("
            "r => [r.dataset.broker, r.querySelectorAll('.bar-line.after').length, r.textContent.includes('(gone)')])")
        assert after_bars[3] == ["4", 3, False], after_bars
        # Nothing is loaded from anywhere but the service.
        origins = browser.execute_script(
            "return performance.getEntriesByType('resource').map(e => new URL(e.name).origin)")
        assert set(origins) <= {base}, origins

        # Execute the reviewed proposal from the page: a confirmation first, then it runs.
        browser.find_element("id", "act-execute").click()
        dialog = wait_for(lambda: browser.find_element("id", "confirm") if browser.execute_script(
            "return document.getElementById('confirm').open") else None, 10, "the confirmation")
        assert f"Execute proposal {proposal['proposal_id']}" in dialog.text
        browser.find_element("id", "confirm-ok").click()
        wait_for(lambda: _text(browser, "exec-state").startswith("running") or None, 30, "the execution running")
        seen = []  # (partitions done, bytes remaining) as the page shows them while it runs
        shot = None
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            status = _text(browser, "exec-state")
            done = int(_text(browser, "exec-partitions").split(" of ")[0])
            left = _text(browser, "exec-bytes-remaining")
            if status.startswith("running"):
                seen.append((done, left))
                if shot is None and left not in ("", "unknown") and done > 0:
                    shot = _shot(browser, "execution")
            else:
                break
            time.sleep(0.5)
        assert _text(browser, "exec-state") == "done", _text(browser, "exec-state")
        assert http(base, "GET", "/state")[1]["execution"]["state"] == "done"
        # Progress advanced on the page while it ran: more partitions done, or fewer bytes left.
        dones = [d for d, _ in seen]
        lefts = [b for _, b in seen]
        assert len(set(dones)) > 1 or len(set(lefts)) > 1, seen
        if shot is None:
            shot = _shot(browser, "execution")
        assert shot.stat().st_size > 0
        # The finished execution is listed with its partitions.
        wait_for(lambda: "done" in _text(browser, "executions") or None, 10, "the execution in the history")

        # Remove a broker: a dry run first (nothing moves), then its reviewed plan is offered for
        # execution behind the confirmation (cancelled here: nothing executes).
        browser.find_element("id", "broker-ids").send_keys("4")
        browser.find_element("id", "act-remove").click()
        wait_for(lambda: "remove broker 4 (dry run):" in _text(browser, "action-result") or None, 60,
                 "the remove dry run")
        assert "nothing executed (dry run)" in _text(browser, "action-result")
        execute = browser.find_element("id", "act-execute-reviewed")
        wait_for(lambda: execute.is_displayed() or None, 10, "the reviewed plan's execute button")
        execute.click()
        wait_for(lambda: browser.execute_script("return document.getElementById('confirm').open") or None, 10,
                 "the confirmation")
        assert "exactly as reviewed" in browser.find_element("id", "confirm").text
        browser.find_element("css selector", "#confirm button[value=cancel]").click()
        time.sleep(1.0)
        assert http(base, "GET", "/state")[1]["execution"]["id"] == 1  # nothing new executed

    # A phone-sized window: the page is one column, nothing wider than the screen (tables scroll
    # inside their own box).
    with chromium(work, width=390, height=844) as phone:
        phone.get(base + "/")
        wait_for(lambda: _text(phone, "proposal-moves") not in ("", "–") or None, 30, "the page on a phone")
        overflow = phone.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 1, overflow
        _shot(phone, "phone")
