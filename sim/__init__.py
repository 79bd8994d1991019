"""Simulated Kafka brokers: they register in ZooKeeper, speak the wire protocol to the
controller, hold replicas with byte sizes, copy at throttled rates and report ISR changes.

Modules: ``replica`` (the copy model), ``fairshare`` (rate sharing), ``throttle`` (KIP-73/179
throttle configs), ``core`` (a broker's state machine), ``metadata`` (its metadata cache),
``effects`` (the ZooKeeper writes a broker asks for), ``assignment`` (Kafka's replica
assignment), ``topics`` (topic creation), ``configwatch`` (config change notifications),
``zookeeper_view`` / ``clusterwatch`` (what brokers read from ZooKeeper themselves: controller
instances, registrations, topics, configs), ``describeconfigs`` (DescribeConfigs),
``controller_link`` (how a broker reaches the active controller), ``controlled_shutdown`` /
``alter_partition`` (what it asks the controller: to move its leaderships away before it
stops, to change an ISR the Kafka 2.7+ way), ``server`` (the TCP listener), ``cluster`` (N
brokers in one process), ``inprocess`` (a socket-free transport to the brokers), ``control``
(the control channel), ``serve`` (what the ``reassignd sim`` command runs).
"""
