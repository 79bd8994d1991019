"""``make demo``: a local cluster (ZooKeeper, simulated brokers, two controllers) rebalanced
onto new brokers with the planner and kafka-reassign, through a controller failover and a
cancel. The driver is demo.run; its processes are demo.procs; the cluster is demo.cluster."""
