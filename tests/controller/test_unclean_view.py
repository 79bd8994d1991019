"""The shell's config view of moving topics' ``unclean.leader.election.enable`` (engine step
12c, controller.core.ended_moves), on the ZooKeeper twin: read from /config/topics/T with the
entries naming the topic, followed when a config change notification names it (a config
written without one is not news), and read at failover for every resumed move - also one whose
entry a tool deleted, so that its rollback or completion still elects by the topic's setting."""

from __future__ import annotations

import json

from tests.controller.harness import Harness
from znodes import paths


async def _config(h: Harness, topic: str, unclean: str, notify: bool) -> None:
    data = json.dumps({"version": 1, "config": {"unclean.leader.election.enable": unclean}}).encode()
    if h.server.exists(paths.topic_config(topic)) is None:
        await h.admin.create(paths.topic_config(topic), data, makepath=True)
    else:
        await h.admin.set(paths.topic_config(topic), data)
    if notify:
        note = json.dumps({"version": 2, "entity_path": f"topics/{topic}"}).encode()
        await h.admin.create(paths.config_change_prefix(), note, sequential=True, makepath=True)
    await h.tick()


async def test_the_unclean_setting_of_moving_topics_is_read_and_followed():
    h = Harness(topics=("t:2:3:64MiB", "u:1:3:64KiB"))  # t's copies take half a minute
    await h.start()
    try:
        await _config(h, "t", "true", notify=False)
        await _config(h, "u", "true", notify=False)
        c1 = await h.start_controller(101)
        ors = h.assignments[("t", 0)]
        await h.submit({("t", 0): [*ors[:-1], next(b for b in range(1, 7) if b not in ors)]})
        await h.tick()
        view = c1.active.state.unclean
        assert view == {"t": True}  # u: no move, not read
        await _config(h, "t", "false", notify=True)
        assert "t" not in c1.active.state.unclean
        await _config(h, "t", "true", notify=False)  # no notification: not news
        assert "t" not in c1.active.state.unclean
        await _config(h, "t", "true", notify=True)
        assert c1.active.state.unclean == {"t": True}
        await _config(h, "u", "true", notify=True)  # named, but nothing of u is held
        assert "u" not in c1.active.state.unclean

        # Failover with the entry deleted by a tool meanwhile: the move resumes from its record,
        # and its topic's setting is read with it.
        h.server.expire_session(c1.store.session_id)
        await h.settle()
        assert h.server.exists(paths.reassignment("t", 0)) is not None
        await h.admin.delete(paths.REASSIGN_PARTITIONS)
        c2 = await h.start_controller(102)
        assert ("t", 0) in c2.active.state.tasks
        assert c2.active.state.unclean == {"t": True}
        await h.run_until_quiet()
        h.check_invariants()
    finally:
        await h.close()


async def test_turning_unclean_on_elects_a_leaderless_partition_from_its_live_replicas():
    """KAFKA-6835 (Kafka's TopicUncleanLeaderElectionEnable): a partition left with leader -1
    (every ISR member gone) gets a leader from its live replicas as soon as a config change
    notification says its topic now allows unclean elections - not only at the next broker
    change - and a topic that still refuses them stays leaderless."""
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        c1 = await h.start_controller(101)
        await h.tick()
        a, b, c = h.assignments[("t", 0)]
        await h.cluster.stop_broker(c)  # out of the ISR
        await h.settle()
        await h.cluster.stop_broker(a)
        await h.settle()
        await h.cluster.stop_broker(b)  # the last ISR member: leader -1, ISR [b]
        await h.settle()
        await h.cluster.start_broker(c)  # live again, but not in the ISR
        await h.settle()
        await h.tick()
        state = h.json(paths.partition_state("t", 0))
        assert state["leader"] == -1 and c not in state["isr"], state
        await _config(h, "t", "false", notify=True)
        assert h.json(paths.partition_state("t", 0))["leader"] == -1
        await _config(h, "t", "true", notify=True)
        await h.settle()
        state = h.json(paths.partition_state("t", 0))
        assert (state["leader"], state["isr"]) == (c, [c]), state
        assert c1.active.state.states[("t", 0)].leader == c
    finally:
        await h.close()


def test_the_steps_offline_replicas_drop_those_an_answer_says_are_back():
    """ActiveController.step_offline: the replicas held offline, with each of the step's
    ReplicasOffline answers' offline ones added and their ``online`` ones taken away (a
    replica back in an online directory is no unclean candidate)."""
    from types import SimpleNamespace

    from controller.core.events import ReplicasOffline
    from controller.shell.active import ActiveController

    held = {1: frozenset({("t", 0), ("t", 1)}), 2: frozenset({("t", 0)})}
    me = SimpleNamespace(state=SimpleNamespace(offline_replicas=held))
    answer = ReplicasOffline(1, 7, frozenset({("u", 0)}), online=frozenset({("t", 1)}))
    merged = ActiveController.step_offline(me, [answer])
    assert merged == {1: frozenset({("t", 0), ("u", 0)}), 2: frozenset({("t", 0)})}
    assert ActiveController.step_offline(me, []) is held


async def test_a_step_taken_again_reads_the_unclean_setting_its_newer_states_need():
    """A broker change's step judged partition t-0 from a state whose ISR had a live member (a
    clean election, no config read); its flush met a newer state - the dead leader had shrunk
    the ISR to itself just before it died - and the step is taken again with that state read
    (controller.shell.state_conflicts). Now only an unclean election can lead t-0, and t allows
    it: the retaken step reads t's setting and elects the first live replica, instead of
    leaving t-0 leaderless until some later change."""
    h = Harness(topics=("t:1:3:64KiB",))
    await h.start()
    try:
        await _config(h, "t", "true", notify=False)
        c1 = await h.start_controller(101)
        await h.tick()
        a, b, c = h.assignments[("t", 0)]
        state_path = paths.partition_state("t", 0)
        assert h.json(state_path)["leader"] == a and sorted(h.json(state_path)["isr"]) == sorted([a, b, c])
        raced = []

        async def dead_leaders_last_write(op):
            if op.path == state_path and not raced:
                data, stat = h.server.read(state_path)
                doc = json.loads(data)
                doc["isr"] = [a]
                await h.admin.set(state_path, json.dumps(doc).encode(), version=stat.version)
                raced.append(doc)

        c1.store.before_op = dead_leaders_last_write
        await h.cluster.stop_broker(a)
        await h.settle()
        c1.store.before_op = None
        assert raced and c1.active.stats.state_retries == 1 and c1.active.stats.reloads == 0
        state = h.json(state_path)
        assert (state["leader"], state["isr"]) == (b, [b]), state
        await h.run_until_quiet()
        h.check_invariants()
    finally:
        await h.close()


async def test_a_retaken_steps_log_directory_answers_get_the_unclean_setting_too():
    """The same for a ReplicasOffline (a broker's LeaderAndIsr answer naming replicas on a failed
    log directory): judged again with the newer states and the answer's replicas offline, its
    topics that now need an unclean election and allow it are added; a topic that refuses
    stays out, and an event that needs nothing new is left as it was."""
    from controller.core.events import ReplicasOffline, offline_check
    from znodes.values import LeaderIsr

    h = Harness(topics=("t:1:3:64KiB", "u:1:3:64KiB"))
    await h.start()
    try:
        await _config(h, "t", "true", notify=False)
        await _config(h, "u", "false", notify=False)
        c1 = await h.start_controller(101)
        await h.tick()
        active = c1.active
        (ta, tb, tc), (ua, ub, uc) = h.assignments[("t", 0)], h.assignments[("u", 0)]
        # Newer states: each partition's ISR is its leader alone, whose replica the answer says
        # is offline; the other replicas are live but out of the ISR.
        newer = {("t", 0): LeaderIsr(ta, 5, 1, (ta,), 9), ("u", 0): LeaderIsr(ua, 5, 1, (ua,), 9)}
        t_answer = ReplicasOffline(ta, active.state.brokers[ta].epoch, frozenset({("t", 0)}))
        u_answer = ReplicasOffline(ua, active.state.brokers[ua].epoch, frozenset({("u", 0)}))
        check = offline_check(None, frozenset({"t"}))  # already allowed t: nothing to add
        events = [t_answer, u_answer, check]
        again = await active._unclean_again(newer, events)
        assert again[0].unclean_topics == {"t"}
        assert again[1] is u_answer and again[2] is check
        assert await active._unclean_again({}, events) == events  # no newer states: as it was
    finally:
        await h.close()
