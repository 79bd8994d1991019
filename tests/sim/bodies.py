"""Request bodies the controller sends, as the codec's dicts (shared by the sim tests)."""


def partition_state(partition, leader, replicas, *, isr=None, leader_epoch=0, zk_version=0, controller_epoch=1,
                    adding=(), removing=(), is_new=False):
    return {
        "partition_index": partition,
        "controller_epoch": controller_epoch,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "isr": list(replicas if isr is None else isr),
        "partition_epoch": zk_version,
        "replicas": list(replicas),
        "adding_replicas": list(adding),
        "removing_replicas": list(removing),
        "is_new": is_new,
    }


def leader_and_isr(topic, states, *, controller_epoch=1, controller_id=100, broker_epoch=-1):
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "topic_states": [{"topic_name": topic, "partition_states": states}],
        "live_leaders": [],
    }


def stop_replica(topic, partitions, *, delete=True, leader_epoch=-2, controller_epoch=1, controller_id=100):
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": topic,
                "partition_states": [
                    {"partition_index": p, "leader_epoch": leader_epoch, "delete_partition": delete} for p in partitions
                ],
            }
        ],
    }


def update_metadata(brokers, topic_states, *, controller_epoch=1, controller_id=100):
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": topic,
                "partition_states": [
                    {
                        "partition_index": p,
                        "controller_epoch": controller_epoch,
                        "leader": replicas[0],
                        "leader_epoch": 0,
                        "isr": list(replicas),
                        "zk_version": 0,
                        "replicas": list(replicas),
                        "offline_replicas": [],
                    }
                    for p, replicas in partitions.items()
                ],
            }
            for topic, partitions in topic_states.items()
        ],
        "live_brokers": [
            {
                "id": b,
                "endpoints": [{"port": port, "host": "127.0.0.1", "listener": "PLAINTEXT", "security_protocol": 0}],
                "rack": rack,
            }
            for b, (port, rack) in brokers.items()
        ],
    }
