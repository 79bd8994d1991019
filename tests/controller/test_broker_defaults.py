"""The brokers' cluster-wide dynamic config, ``/config/brokers/<default>`` (what ``kafka-configs.sh
--entity-type brokers --entity-default`` and an IncrementalAlterConfigs of the BROKER resource
"" write): its ``unclean.leader.election.enable`` and ``min.insync.replicas`` stand for a topic
without its own, as on Kafka's brokers (their dynamic config over server.properties). Turned
on, the unclean default elects every leaderless partition that only an unclean election can
lead, at once (Kafka's UncleanLeaderElectionEnable); a topic's own "false" still wins; a new
controller's first offline check honours it."""

from __future__ import annotations

import json

from tests.controller.fixtures import harness_fixture
from znodes import paths

h = harness_fixture("t:2:3:64MiB", "u:1:3:64MiB")  # t-1 on 5,3,4; u-0 on ...


def _note(entity_path: str) -> bytes:
    return json.dumps({"version": 2, "entity_path": entity_path}).encode()


async def _write_config(h, path: str, config: dict, entity_path: str) -> None:
    data = json.dumps({"version": 1, "config": config}).encode()
    if h.server.exists(path) is None:
        await h.admin.create(path, data, makepath=True)
    else:
        await h.admin.set(path, data)
    await h.admin.create(paths.config_change_prefix(), _note(entity_path), sequential=True, makepath=True)


async def _leave_leaderless(h, tps) -> dict:
    """Stop every replica of each partition in ``tps`` but the one out of its ISR that comes
    back: each ends with leader -1 and a dead ISR, one live replica outside it."""
    replicas = {tp: h.json(paths.topic(tp[0]))["partitions"][str(tp[1])] for tp in tps}
    comeback = {}
    for tp, rs in replicas.items():
        comeback[tp] = rs[-1]
    stopped = set()
    for tp, rs in replicas.items():
        for b in [comeback[tp], *[r for r in rs if r != comeback[tp]]]:
            if b not in stopped:
                await h.cluster.stop_broker(b)
                stopped.add(b)
                await h.settle()
    for b in sorted(set(comeback.values())):
        await h.cluster.start_broker(b)
        await h.settle()
    for tp in tps:
        state = h.json(paths.partition_state(*tp))
        assert state["leader"] == -1 and comeback[tp] not in state["isr"], (tp, state)
    return comeback


async def test_the_cluster_default_turned_on_elects_leaderless_partitions_of_topics_without_their_own(h):
    c = await h.start_controller(101)
    await h.tick()
    comeback = await _leave_leaderless(h, [("t", 1), ("u", 0)])
    # u says false itself: the default does not reach it.
    await _write_config(h, paths.topic_config("u"), {"unclean.leader.election.enable": "false"}, "topics/u")
    await h.settle()
    await _write_config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG),
                        {"unclean.leader.election.enable": "true"}, "brokers/<default>")
    await h.settle()
    state = h.json(paths.partition_state("t", 1))
    assert state["leader"] in set(comeback.values()) and state["isr"] == [state["leader"]], state
    assert h.json(paths.partition_state("u", 0))["leader"] == -1
    assert c.active.unclean_default is True


async def test_a_new_controller_elects_unclean_under_the_cluster_default(h):
    c = await h.start_controller(101)
    await h.tick()
    comeback = await _leave_leaderless(h, [("t", 1)])
    await c.stop()
    # Written while no controller is active: the next one reads it with the cluster.
    await _write_config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG),
                        {"unclean.leader.election.enable": "true"}, "brokers/<default>")
    await h.start_controller(102)
    await h.tick()
    state = h.json(paths.partition_state("t", 1))
    assert (state["leader"], state["isr"]) == (comeback[("t", 1)], [comeback[("t", 1)]]), state


async def test_the_cluster_default_min_insync_replicas_is_the_engines_floor_over_the_setting(h):
    c = await h.start_controller(101)
    await h.tick()
    assert c.active.engine_config is c.active.config  # nothing set: the settings as they are
    await _write_config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG), {"min.insync.replicas": "2"},
                        "brokers/<default>")
    await h.settle()
    assert c.active.min_isr_default == 2 and c.active.engine_config.min_insync_replicas == 2
    assert c.active.config.min_insync_replicas == 1  # the setting itself is not changed
    # A value Kafka would refuse is no default: the setting applies.
    await _write_config(h, paths.broker_config(paths.BROKER_DEFAULT_CONFIG), {"min.insync.replicas": "zero"},
                        "brokers/<default>")
    await h.settle()
    assert c.active.min_isr_default is None and c.active.engine_config is c.active.config
