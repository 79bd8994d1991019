"""Properties of BrokerCore under arbitrary control-request sequences (Hypothesis)."""

from hypothesis import given
from hypothesis import strategies as st

from sim.clock import ManualClock
from sim.core import BrokerCore
from sim.replica import CopySettings, ReplicationModel
from tests.sim.bodies import leader_and_isr, partition_state, stop_replica

BROKER = 2

requests = st.one_of(
    st.tuples(
        st.just("lai"),
        st.integers(0, 5),  # controller epoch
        st.integers(0, 2),  # partition
        st.integers(0, 6),  # leader epoch
        st.sampled_from([[1, 2], [2, 3], [1, 3], [2]]),  # replicas (leader = first)
        st.integers(0, 5),  # zk version
    ),
    st.tuples(st.just("stop"), st.integers(0, 5), st.integers(0, 2), st.integers(-2, 6), st.booleans()),
)


@given(st.lists(requests, max_size=30))
def test_epochs_never_go_back_and_stale_requests_change_nothing(seq):
    clock = ManualClock()
    model = ReplicationModel(CopySettings(bandwidth=None, produce_bytes=0, produce_messages=0))
    core = BrokerCore(BROKER, model, clock)
    for request in seq:
        before_epoch = core.controller_epoch
        before = {r.key: (r.leader_epoch, r.role, r.leader) for r in core.replicas()}
        if request[0] == "lai":
            _, c_epoch, p, l_epoch, replicas, zk = request
            body = leader_and_isr("t", [partition_state(p, replicas[0], replicas, leader_epoch=l_epoch, zk_version=zk)],
                                  controller_epoch=c_epoch)
            response = core.handle(4, 4, body)
        else:
            _, c_epoch, p, l_epoch, delete = request
            response = core.handle(5, 3, stop_replica("t", [p], delete=delete, leader_epoch=l_epoch,
                                                      controller_epoch=c_epoch))
        after = {r.key: (r.leader_epoch, r.role, r.leader) for r in core.replicas()}
        assert core.controller_epoch >= before_epoch
        if c_epoch < before_epoch:
            assert response["error_code"] == 11 and after == before
        for key, (epoch, _, _) in after.items():
            if key in before:
                assert epoch >= before[key][0]
        for error in response["partition_errors"]:
            if error["error_code"] != 0:
                key = (error["topic_name"], error["partition_index"])
                assert after.get(key) == before.get(key)
        for replica in core.replicas():
            assert BROKER in replica.replicas or replica.replicas == ()
