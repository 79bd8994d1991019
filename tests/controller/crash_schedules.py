"""Scripted schedules that cut every crash point, run with every stateful run.

Random schedules cut the common crash points hundreds of times in a couple of thousand
schedules, but a few points come only from rare combinations (a rollback's write to
``/admin/reassign_partitions`` needs entries withdrawn before they started; a queue's record
write needs a queued target behind a rollback), and about 1,000 random schedules left one of
the 30 uncut. So every point of :data:`crashpoints.POINTS` also gets a scripted schedule here,
run twice - the controller crashed there, and deposed there - which makes the coverage of a
run independent of its seed and of its schedule count.

A script is a list of the state machine's own rules (tests/controller/test_stateful.py), each
applied only where its precondition holds (a step Hypothesis could draw), with every invariant
after every step and the teardown's quiescent checks at the end: :func:`replay`. The cut is
armed first (``cut_flush``), so it lands on the first flush of its kind that writes its op;
:data:`REVIVE` starts a controller when the cut left none. A script that no longer cuts its
point fails the run: the flush shapes or the rules changed, and the script must follow.
:data:`EXTRA` adds scripts for what random schedules rarely reach although their point is
common (an unclean election that elects), run crashing and deposing the same way.

    failures, coverage = run_all()     # [] and the points written and cut, every one cut
"""

from __future__ import annotations

import traceback

from hypothesis.stateful import INVARIANT_MARKER, RULE_MARKER

from controller.core import flush
from controller.core.elections import PREFERRED, UNCLEAN
from tests.controller.crashpoints import POINTS, Coverage, Points

REVIVE = ("revive",)  # start a controller if none is alive (a cut just killed the active one)


class Drawn:
    """Stands in for Hypothesis's ``data``: hands out the values the script draws, in order."""

    def __init__(self, *values):
        self.values = list(values)

    def draw(self, _strategy):
        return self.values.pop(0)


def submit(rule: str, targets: dict[int, list[int]]) -> tuple:
    """A step of a rule drawing a batch (submit, submit_throttled, retarget, queue): partition
    -> target of topic t."""
    return (rule, {"data": Drawn(set(targets), *(targets[p] for p in sorted(targets)))})


def rule(name: str, **kwargs) -> tuple:
    return (name, kwargs)


# Built per schedule (a Drawn hands its values out once). Every flush kind in turn, a controller revived after each step that may have cut it. The
# initial assignment is t-0 [4,2,3], t-1 [5,3,4], t-2 [6,4,5], t-3 [1,5,6], t-4 [2,6,1],
# t-5 [3,1,2] (the harness's topic t:6:3); copies finish within a tick or two.
def _common() -> list[tuple]:
    return [
        # start (records parent, record create, state, topic, requests) with auto-removable throttles
        submit("submit_throttled", {0: [1, 2, 3], 1: [2, 3, 4], 2: [3, 4, 1], 3: [4, 1, 2]}), REVIVE,
        # override: t-0 retargeted while it copies (no tick has passed)
        submit("retarget", {0: [2, 3, 4]}), REVIVE,
        # queue: t-1 queued to a new target while it moves
        submit("queue", {1: [1, 2, 3]}), REVIVE,
        # complete, finish, then the throttle removal once no move runs
        rule("tick", n=4), REVIVE, rule("tick", n=8), REVIVE, rule("tick", n=8), REVIVE,
        # rollback and rollback-finish: moves cancelled while they copy
        submit("submit", {4: [1, 2, 3], 5: [2, 3, 4]}), REVIVE,
        rule("cancel_all"), REVIVE,
        rule("tick", n=8), REVIVE,
        # admin: ReassignPartitions through the API (its throttles and entries are the engine's
        # writes), once the earlier throttles are gone so that every config write changes something
        submit("reassign_api", {4: [2, 3, 4]}), REVIVE,
        rule("tick", n=8), REVIVE,
    ]


# The rare ones, after the common steps (the armed cut waits for its op). After them t-2 is
# at [3,4,1] and t-3 at [4,1,2].
def _rare() -> dict[tuple[str, str], list[tuple]]:
    return {
        # A queued target behind a rollback: with no controller running, t-3 is cancelled and then
        # queued elsewhere; the next controller takes both in one step, the record keeping the
        # queued target (next_replicas) in the queue's flush.
        (flush.QUEUE, "record write"): [
            submit("submit", {3: [1, 2, 3]}), rule("expire_active"), rule("cancel_all"),
            submit("queue", {3: [2, 3, 4]}), REVIVE, rule("tick", n=8), REVIVE,
        ],
        # An entry withdrawn before it started: a queued target lands in /admin/reassign_partitions
        # with its original replicas and its start is cut before anything of it landed; a cancel
        # then finds it pending, and the next controller drops it from the znode in the rollback's
        # flush (KIP-236 step 1).
        (flush.ROLLBACK, "requests"): [
            rule("cut_flush", point=(flush.START, "records parent"), deposing=False), rule("expire_active"),
            submit("queue", {2: [1, 2, 3]}), rule("start_controller"), rule("cancel_all"), REVIVE,
            rule("tick", n=8), REVIVE,
        ],
    }


# The kinds whose scripts run on the topics machine (tests/controller/test_stateful_topics.py,
# which runs the reassignment machine's rules too): topic requests, the new partitions' states
# they lead to, a deleted topic's znodes, elections asked for.
TOPIC_KINDS = (flush.TOPICS, flush.CREATE, flush.DELETE, flush.ELECT)


# Topic requests and what follows them (kinds "topics", "create", "delete"): a topic created
# (twice: a cut may take the first), given a partition, then deleted, a controller revived
# after each. Its first partition's state comes with both parents, the added one's with its own.
def _topics() -> list[tuple]:
    return [
        ("create_topic", {"name": "n0", "partitions": 2, "rf": 2}), REVIVE,
        # again: a cut may have taken the first one (an answered second one is TOPIC_ALREADY_EXISTS)
        ("create_topic", {"name": "n0", "partitions": 2, "rf": 2}), REVIVE,
        rule("add_partitions", data=Drawn("n0"), more=1), REVIVE,
        rule("delete_topic", data=Drawn("n0")), REVIVE,
        rule("tick", n=8), REVIVE,
    ]


# An election asked for (kind "elect"): broker 5 stops, so t-1 [5,3,4] is led by 3, and comes
# back into its ISR; a preferred election of every partition gives t-1 back to 5. Then the same
# through Kafka's ZooKeeper door (/admin/preferred_replica_election naming t-1), whose flush
# deletes the znode after the state.
def _elect() -> list[tuple]:
    bounce = [rule("toggle_broker", b=5), REVIVE, rule("toggle_broker", b=5), REVIVE, rule("tick", n=8), REVIVE]
    return [
        *bounce,
        rule("elect", data=Drawn(None), election_type=PREFERRED), REVIVE,
        rule("tick", n=8), REVIVE,
        *bounce,
        rule("elect_by_znode", data=Drawn([("t", 1)])), REVIVE,
        rule("tick", n=8), REVIVE,
    ]


# An unclean election (kind "elect" again), which random schedules reach about once in 300: it
# elects only when no ISR member is online and another replica is. t-2 [6,4,5] loses 4 to a
# failed directory (out of its ISR until broker 4 restarts, at the end), 6 stops (5 leads, ISR
# [5]) and comes back (out of the ISR until a tick lets it catch up), 5 stops: t-2 is leaderless
# with ISR [5] and 6 online. An unclean ElectLeaders of t-2 elects 6, ISR [6]; asked again, it
# elects 6 then if a cut took the first (the new controller does not: t's unclean setting is
# false), else answers ELECTION_NOT_NEEDED.
UNCLEAN_PARTITION = ("t", 2)


def unclean_election() -> list[tuple]:
    return [
        rule("fail_dir", b=4, directory="/data/d1"), REVIVE,
        rule("toggle_broker", b=6), REVIVE, rule("toggle_broker", b=6), REVIVE,
        rule("toggle_broker", b=5), REVIVE,
        rule("elect", data=Drawn([UNCLEAN_PARTITION]), election_type=UNCLEAN), REVIVE,
        rule("elect", data=Drawn([UNCLEAN_PARTITION]), election_type=UNCLEAN), REVIVE,
        rule("tick", n=8), REVIVE,
    ]


# Scripted schedules beyond each point's own, crashing and deposing alike: name -> (the point
# cut, its script). Each is armed first, like a point's, and must cut its point.
EXTRA = {"unclean election": ((flush.ELECT, "state"), unclean_election)}
COUNT = 2 * (len(POINTS) + len(EXTRA))  # scripted schedules per run: each crashing, then deposing


def script(point: tuple[str, str]) -> list[tuple]:
    if point[0] == flush.ELECT:
        return _elect()
    if point[0] in TOPIC_KINDS:
        return _topics()
    return _common() + _rare().get(point, [])


def machine_of(point: tuple[str, str]):
    """The state machine a point's script runs on."""
    if point[0] in TOPIC_KINDS:
        from tests.controller.test_stateful_topics import TopicsMachine

        return TopicsMachine
    return None  # replay's default, the reassignment machine


def _holds(m, name: str) -> bool:
    return all(pre(m) for pre in getattr(getattr(type(m), name), RULE_MARKER).preconditions)


def _check(m) -> None:
    for name in dir(type(m)):
        if getattr(getattr(type(m), name, None), INVARIANT_MARKER, None) is not None:
            getattr(m, name)()


def replay(steps: list[tuple], machine=None) -> Points:
    """Run ``steps`` on a fresh ControllerMachine after its initial step, every invariant after
    each, then its teardown (the quiescent checks); return the crash points written and cut."""
    from tests.controller.test_stateful import ControllerMachine

    m = (machine or ControllerMachine)()
    try:
        m.start()
        _check(m)
        for step in steps:
            if step == REVIVE:
                if m.alive():
                    continue
                step = ("start_controller", {})
            name, kwargs = step
            assert _holds(m, name), f"{name}: its precondition does not hold here (Hypothesis would never draw it)"
            getattr(m, name)(**kwargs)
            _check(m)
    except BaseException:
        m.run(m.h.close())
        m.loop.close()
        raise
    m.teardown()
    return m.h.points


def run_one(point: tuple[str, str], deposing: bool, steps: list[tuple] | None = None,
            name: str = "scripted schedule") -> tuple[Points | None, str | None]:
    """The scripted schedule of ``point`` (``steps``, else its own script): its points, or the
    failure's report."""
    where = f"{name} cutting {point[0]} before its {point[1]} ({'deposing' if deposing else 'crashing'})"
    steps = script(point) if steps is None else steps
    try:
        points = replay([rule("cut_flush", point=point, deposing=deposing), *steps], machine_of(point))
    except BaseException as e:  # noqa: BLE001 (any failure is reported with its traceback)
        if isinstance(e, KeyboardInterrupt):
            raise
        return None, f"{where} failed:\n" + "".join(traceback.format_exception(e))
    if point not in points.cuts:
        return points, f"{where} never cut it: the script no longer reaches that op (tests/controller/crash_schedules.py)"
    return points, None


def run_all(kinds=None) -> tuple[list[str], Coverage]:
    """Every point's scripted schedules and the EXTRA ones (of ``kinds`` only, if given),
    crashing and deposing: the failures and the coverage."""
    import logging

    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # the controllers' warnings are expected here
    failures: list[str] = []
    coverage = Coverage()
    runs = [(point, None, "scripted schedule") for point in POINTS]
    runs += [(point, steps, f"scripted schedule {name!r}") for name, (point, steps) in EXTRA.items()]
    try:
        for point, steps, name in runs:
            if kinds is not None and point[0] not in kinds:
                continue
            for deposing in (False, True):
                points, failure = run_one(point, deposing, None if steps is None else steps(), name)
                if points is not None:
                    coverage.add(points)
                if failure is not None:
                    failures.append(failure)
    finally:
        logging.disable(previous)  # a pytest process runs other tests after these
    return failures, coverage


assert {k for k, _ in POINTS} == set(flush.FLUSH_KINDS), "a flush kind without crash points in crashpoints.SHAPES"
