"""Issue 23 item 4, the planner's disk balance inside a broker (spark_jobs.disks, pure): the
moves even out the directories, never go to an offline directory or leave their broker, never
fill a disk past the threshold, and planning the planned layout proposes nothing."""

from __future__ import annotations

import random

import pytest

from spark_jobs import disks
from spark_jobs.disks import LogDir, plan_disks
from spark_jobs.errors import PlanError

MiB = 1 << 20


def _apply(layouts: dict, plan: disks.DiskPlan) -> dict:
    """The layouts once every move of ``plan`` is done (each replica's log in its target)."""
    out = {}
    for b, dirs in layouts.items():
        current = {d.path: dict(d.replicas) for d in dirs}
        for m in plan.moves:
            if m.broker == b:
                current[m.target][(m.topic, m.partition)] = current[m.source].pop((m.topic, m.partition))
        out[b] = [LogDir(d.path, d.online, d.total_bytes, current[d.path]) for d in dirs]
    return out


def _uses(dirs: list[LogDir]) -> list[float]:
    return [sum(d.replicas.values()) / d.total_bytes for d in dirs if d.online]


def _assign(layouts: dict, extra: dict | None = None) -> dict:
    """Every replica the layouts hold, its partition's replicas being the brokers that hold it."""
    out: dict = {}
    for b, dirs in sorted(layouts.items()):
        for d in dirs:
            for tp in d.replicas:
                out.setdefault(tp, []).append(b)
    out.update(extra or {})
    return out


def test_an_uneven_broker_is_balanced_with_the_fewest_moves_largest_first():
    # 36 MiB on /d1, nothing on /d2: 18 each is the aim, and 8+7+3 gets there in three moves.
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("a", i): (i + 1) * MiB for i in range(8)}),
                   LogDir("/d2", True, 100 * MiB, {})]}
    plan = plan_disks(layouts, _assign(layouts))
    assert [(m.partition, m.source, m.target) for m in plan.moves] == [(2, "/d1", "/d2"), (6, "/d1", "/d2"),
                                                                       (7, "/d1", "/d2")]
    after = _uses(_apply(layouts, plan)[1])
    assert after == [pytest.approx(0.18), pytest.approx(0.18)]
    r = plan.report()
    assert r["moves"] == 3 and r["bytes_moved"] == 18 * MiB
    assert r["brokers"][0]["balanced_before"] is False and r["brokers"][0]["balanced_after"] is True
    # Kafka's reassignment JSON: replicas as they are, the moved replica's directory named
    assert plan.reassignment()["partitions"][0] == {"topic": "a", "partition": 2, "replicas": [1],
                                                    "log_dirs": ["/d2"]}


def test_directories_of_different_sizes_are_balanced_by_used_fraction():
    # /big is four times /small: the same fraction means four times the bytes.
    layouts = {3: [LogDir("/small", True, 100 * MiB, {("t", i): 10 * MiB for i in range(5)}),
                   LogDir("/big", True, 400 * MiB, {})]}
    plan = plan_disks(layouts, _assign(layouts))
    after = _apply(layouts, plan)[3]
    assert [sum(d.replicas.values()) for d in after] == [10 * MiB, 40 * MiB]
    assert all(abs(u - 0.1) <= 0.1 * 0.1 for u in _uses(after))


def test_the_reassignment_names_each_moved_replicas_directory_and_any_for_the_others():
    layouts = {1: [LogDir("/a", True, 100 * MiB, {("t", 0): 20 * MiB, ("t", 1): 1 * MiB}),
                   LogDir("/b", True, 100 * MiB, {})],
               2: [LogDir("/a", True, 100 * MiB, {("t", 0): 20 * MiB}),
                   LogDir("/b", True, 100 * MiB, {("t", 1): 1 * MiB})],
               3: [LogDir("/x", True, 100 * MiB, {("t", 0): 20 * MiB, ("t", 2): 19 * MiB}),
                   LogDir("/y", True, 100 * MiB, {})]}
    assign = {("t", 0): [3, 1, 2], ("t", 1): [1, 2], ("t", 2): [3]}
    plan = plan_disks(layouts, assign)
    entries = {(e["topic"], e["partition"]): e for e in plan.reassignment()["partitions"]}
    # broker 1 moves t-0 to /b (20 MiB vs 1), broker 3 one of its two; broker 2 moves t-0 too
    assert entries[("t", 0)]["replicas"] == [3, 1, 2]
    assert entries[("t", 0)]["log_dirs"][1] == "/b"
    for e in entries.values():
        assert len(e["log_dirs"]) == len(e["replicas"])
        assert all(d == "any" or d.startswith("/") for d in e["log_dirs"])


def test_a_balanced_broker_gets_no_move():
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("a", 0): 10 * MiB, ("a", 1): 1 * MiB}),
                   LogDir("/d2", True, 100 * MiB, {("a", 2): 10 * MiB, ("a", 3): 1 * MiB})]}
    plan = plan_disks(layouts, _assign(layouts))
    assert plan.moves == [] and plan.reassignment() == {"version": 1, "partitions": []}
    assert plan.report()["brokers"][0]["balanced_before"] is True


def test_no_move_that_only_swaps_the_imbalance():
    # One 30 MiB replica on /d1, /d2 empty: moving it only mirrors the imbalance; no move.
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("a", 0): 30 * MiB}), LogDir("/d2", True, 100 * MiB, {})]}
    assert plan_disks(layouts, _assign(layouts)).moves == []


def test_a_broker_with_an_offline_directory_moves_nothing_and_says_why():
    # Kafka creates no future log while any directory of the broker is offline, so every
    # AlterReplicaLogDirs on it fails; the offline directory's replicas are not even listed.
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("a", 0): 30 * MiB, ("a", 1): 20 * MiB}),
                   LogDir("/d2", True, 100 * MiB, {}),
                   LogDir("/d3", False, -1, {})],
               2: [LogDir("/d1", True, 100 * MiB, {("a", 0): 30 * MiB, ("a", 1): 20 * MiB}),
                   LogDir("/d2", True, 100 * MiB, {})]}
    assign = _assign(layouts, {("b", 0): [1, 2]})  # b-0's replica on broker 1 was in /d3
    layouts[2][1] = LogDir("/d2", True, 100 * MiB, {("b", 0): 1 * MiB})
    plan = plan_disks(layouts, assign)
    assert {m.broker for m in plan.moves} == {2}
    assert all(m.target != "/d3" for m in plan.moves)
    r = plan.report()
    assert r["brokers_skipped"] == [{"broker": 1, "reason": disks.SKIP_OFFLINE.format(dirs="/d3")}]
    assert "KAFKA_STORAGE_ERROR" in r["brokers_skipped"][0]["reason"]
    assert {"topic": "b", "partition": 0, "broker": 1,
            "reason": disks.WHY_OFFLINE.format(dirs="/d3")} in r["unmovable"]


def test_a_replica_already_moving_stays_and_counts_where_it_goes():
    # a-0 (40 MiB) is copying into /d2: /d2 will hold it, so /d1's 40 MiB of others must stay
    # out of balance's way only as far as that leaves: 40 on each side, nothing to do.
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("a", 0): 40 * MiB, ("a", 1): 20 * MiB, ("a", 2): 20 * MiB}),
                   LogDir("/d2", True, 100 * MiB, {}, {("a", 0): 5 * MiB})]}
    plan = plan_disks(layouts, _assign(layouts))
    assert plan.moves == []
    assert plan.report()["unmovable"] == [{"topic": "a", "partition": 0, "broker": 1,
                                           "reason": disks.WHY_MOVING.format(dir="/d2")}]


def test_a_stray_replica_is_not_moved():
    layouts = {1: [LogDir("/d1", True, 100 * MiB, {("gone", 0): 50 * MiB, ("a", 0): 1 * MiB}),
                   LogDir("/d2", True, 100 * MiB, {})]}
    plan = plan_disks(layouts, {("a", 0): [1]})
    assert [(m.topic, m.partition) for m in plan.moves] == [("a", 0)]  # the only one it may move
    assert plan.report()["unmovable"][0]["reason"] == disks.WHY_STRAY.format(broker=1)


def test_no_disk_is_filled_past_the_threshold():
    # /small (10 MiB) may take at most 8 MiB: the 9 MiB replica never goes there.
    layouts = {1: [LogDir("/big", True, 20 * MiB, {("a", 0): 9 * MiB, ("a", 1): 3 * MiB, ("a", 2): 3 * MiB}),
                   LogDir("/small", True, 10 * MiB, {})]}
    plan = plan_disks(layouts, _assign(layouts))
    assert plan.moves and all(m.partition != 0 for m in plan.moves)
    small = _apply(layouts, plan)[1][1]
    assert sum(small.replicas.values()) <= 0.8 * 10 * MiB


def test_unknown_capacities_balance_bytes():
    layouts = {1: [LogDir("/d1", True, -1, {("a", i): MiB for i in range(6)}), LogDir("/d2", True, -1, {})]}
    plan = plan_disks(layouts, _assign(layouts))
    assert len(plan.moves) == 3
    assert plan.report()["brokers"][0]["balanced_by"].startswith("bytes")


def test_a_broker_with_one_directory_or_no_answer_is_skipped():
    layouts = {1: [LogDir("/only", True, 100 * MiB, {("a", 0): MiB})], 2: "connection refused"}
    plan = plan_disks(layouts, {("a", 0): [1, 2]})
    assert plan.moves == []
    assert plan.skipped == {1: disks.SKIP_ONE_DIR, 2: disks.SKIP_NO_ANSWER.format(why="connection refused")}


def test_bad_requests_are_refused():
    with pytest.raises(PlanError, match="band"):
        plan_disks({}, {}, band=1.5)
    with pytest.raises(PlanError, match="threshold"):
        plan_disks({}, {}, threshold=0)
    with pytest.raises(PlanError, match="broker.*7"):
        plan_disks({1: []}, {}, brokers=[7])


def test_dirs_from_a_describe_log_dirs_answer():
    answer = {"error_code": 0, "results": [
        {"error_code": 0, "log_dir": "/d1", "total_bytes": 1000, "usable_bytes": 900, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "partition_size": 100, "offset_lag": 0,
                                          "is_future_key": False},
                                         {"partition_index": 1, "partition_size": 7, "offset_lag": 0,
                                          "is_future_key": True}]}]},
        {"error_code": 56, "log_dir": "/d2", "total_bytes": -1, "usable_bytes": -1, "topics": []},
        {"error_code": 0, "log_dir": "/d3", "topics": []},  # v0-3: no sizes
    ]}
    d1, d2, d3 = disks.dirs_from_answer(answer)
    assert d1 == LogDir("/d1", True, 1000, {("t", 0): 100}, {("t", 1): 7})
    assert d2.online is False and d2.total_bytes == -1
    assert d3.total_bytes == -1 and d3.online


@pytest.mark.parametrize("seed", range(40))
def test_random_layouts_hold_every_rule_and_replanning_proposes_nothing(seed):
    rng = random.Random(seed)
    layouts: dict = {}
    for b in range(1, rng.randint(2, 4)):
        n = rng.randint(2, 4)
        dirs = [LogDir(f"/data/d{i}", rng.random() > 0.1, rng.choice([50, 100, 200]) * MiB, {}) for i in range(n)]
        for k in range(rng.randint(0, 25)):
            d = rng.choice([d for d in dirs if d.online] or dirs)
            d.replicas[("t", k)] = rng.choice([0, 1, 2, 5, 8, 13]) * MiB // rng.choice([1, 2])
        layouts[b] = [LogDir(d.path, d.online, d.total_bytes, d.replicas if d.online else {}) for d in dirs]
    assign = _assign(layouts)
    plan = plan_disks(layouts, assign)
    for m in plan.moves:
        dirs = {d.path: d for d in layouts[m.broker]}
        assert dirs[m.target].online and m.source != m.target
        assert all(d.online for d in layouts[m.broker])  # nothing moves on a broker with an offline dir
        assert (m.topic, m.partition) in dirs[m.source].replicas
    after = _apply(layouts, plan)
    for b, dirs in after.items():
        before_spread = _spread(layouts[b])
        assert _spread(dirs) <= before_spread + 1e-12  # never worse
        moved_in = {m.target for m in plan.moves if m.broker == b}
        for d in dirs:
            if d.path in moved_in:
                assert sum(d.replicas.values()) <= 0.8 * d.total_bytes
    assert plan_disks(after, assign).moves == []


def _spread(dirs: list[LogDir]) -> float:
    u = _uses(dirs)
    if not u:
        return 0.0
    m = sum(sum(d.replicas.values()) for d in dirs if d.online) / sum(d.total_bytes for d in dirs if d.online)
    return sum((x - m) ** 2 for x in u)


@pytest.mark.parametrize("extra", [["--chart", "c.png"], ["--capacity", "cap.json"], ["--topics", "a"],
                                   ["--fix-racks"], ["--throttle", "5"]])
def test_the_command_refuses_inter_broker_options_with_rebalance_disks(extra, tmp_path, capsys):
    from reassignd.plan import main

    out = tmp_path / "plan.json"
    assert main(["--snapshot", str(tmp_path / "none.json"), "--rebalance-disks", "--out", str(out), *extra]) == 2
    assert "do not apply" in capsys.readouterr().err and not out.exists()


def test_the_command_names_a_bad_band(tmp_path, capsys):
    from reassignd.plan import main

    assert main(["--snapshot", "x.json", "--rebalance-disks", "--out", "p.json", "--disk-balance-band", "1.5"]) == 2
    assert "--disk-balance-band" in capsys.readouterr().err


def test_a_reviewed_move_stands_only_while_its_directories_are_as_planned():
    tp = ("orders", 0)
    move = disks.DiskMove("orders", 0, 1, "/d1", "/d2", 10)
    now = [disks.LogDir("/d1", replicas={tp: 10}), disks.LogDir("/d2")]
    assert disks.moves_out_of_date([move], {1: now}) == []
    cases = [
        ({1: "timed out"}, "orders-0 on broker 1: no DescribeLogDirs answer (timed out)"),
        ({}, "orders-0 on broker 1: no DescribeLogDirs answer (not asked)"),
        ({1: [disks.LogDir("/d1"), disks.LogDir("/d2", replicas={tp: 10})]},
         "orders-0 on broker 1: no longer in /d1 (now in /d2)"),
        ({1: [disks.LogDir("/d1", replicas={tp: 10}), disks.LogDir("/d2", futures={tp: 3})]},
         "orders-0 on broker 1: already moving to /d2"),
        ({1: [disks.LogDir("/d1", replicas={tp: 10}), disks.LogDir("/d3")]},
         "orders-0 on broker 1: target directory /d2 is gone"),
        ({1: [disks.LogDir("/d1", replicas={tp: 10}), disks.LogDir("/d2", online=False)]},
         "orders-0 on broker 1: log directory /d2 is offline now"),
    ]
    for layouts, why in cases:
        assert disks.moves_out_of_date([move], layouts) == [why], layouts
