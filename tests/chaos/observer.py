"""The observer: a ZooKeeper client of its own (straight to the ensemble, never through a
proxy) that records what the checker needs to judge the run independently of the controllers.

* ``/controller_epoch``: polled every 50 ms with its stat; each new zkVersion is recorded as
  ``{"type": "epoch", "epoch": e, "version": v, "mzxid": z}`` (the zombie check's timeline).
* every partition state znode: polled every 0.5 s; each new mzxid is recorded as
  ``{"type": "state", "tp": "orders/3", "leader": l, "isr": [...], "mzxid": z}``.
* the moves, in the same poll: the topic znodes are read first, then the states, and whenever
  the partitions adding or removing replicas (or their ISRs) differ from the last record,
  ``{"type": "moves", "moving": {"orders/3": {"replicas", "adding", "removing", "isr"}}}``
  (empty when nothing moves): the caps check's samples.

It runs in a thread; ZooKeeper being unreachable (a quorum taken down) only pauses it.

    observer = Observer(kazoo_client, history, partitions=["orders/0", ...]).start()
    ...
    observer.stop()
"""

from __future__ import annotations

import json
import threading
import time

from kazoo.client import KazooClient

from tests.chaos.history import History

EPOCH_POLL_S = 0.05
STATE_POLL_S = 0.5


class Observer:
    def __init__(self, zk: KazooClient, history: History, partitions: list[str]):
        self.zk = zk
        self.history = history
        self.partitions = partitions
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-observer", daemon=True)
        self._epoch_version: int | None = None
        self._state_mzxid: dict[str, int] = {}
        self._moving: dict | None = None
        self.errors = 0

    def start(self) -> "Observer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        next_states = 0.0
        while not self._stop.is_set():
            try:
                self.poll_epoch()
                if time.monotonic() >= next_states:
                    self.poll_states()
                    next_states = time.monotonic() + STATE_POLL_S
            except Exception:  # no quorum, a reconnect: look again shortly
                self.errors += 1
                self._stop.wait(0.2)
                continue
            self._stop.wait(EPOCH_POLL_S)

    def poll_epoch(self) -> None:
        data, stat = self.zk.get("/controller_epoch")
        if stat.version != self._epoch_version:
            self._epoch_version = stat.version
            self.history.add("epoch", epoch=int(data), version=stat.version, mzxid=stat.mzxid)

    def poll_states(self) -> None:
        # Topic znodes first, then the states, all pipelined: milliseconds apart, and an ISR
        # that grew in between only hides a copy from the caps check, never adds one.
        topics = [(t, self.zk.get_async(f"/brokers/topics/{t}")) for t in sorted({tp.split("/")[0] for tp in self.partitions})]
        docs = {t: json.loads(r.get(timeout=10)[0]) for t, r in topics}
        pending = [(tp, self.zk.get_async(f"/brokers/topics/{tp.split('/')[0]}/partitions/{tp.split('/')[1]}/state"))
                   for tp in self.partitions]
        isr: dict[str, list[int]] = {}
        for tp, result in pending:
            data, stat = result.get(timeout=10)
            isr[tp] = json.loads(data)["isr"]
            if self._state_mzxid.get(tp) == stat.mzxid:
                continue
            self._state_mzxid[tp] = stat.mzxid
            state = json.loads(data)
            self.history.add("state", tp=tp, leader=state["leader"], isr=state["isr"],
                             leader_epoch=state.get("leader_epoch"), controller_epoch=state.get("controller_epoch"),
                             mzxid=stat.mzxid)
        moving = {}
        for t, doc in docs.items():
            adding, removing = doc.get("adding_replicas") or {}, doc.get("removing_replicas") or {}
            for p in sorted({*adding, *removing}, key=int):
                if adding.get(p) or removing.get(p):
                    tp = f"{t}/{p}"
                    moving[tp] = {"replicas": doc["partitions"][p], "adding": adding.get(p, []),
                                  "removing": removing.get(p, []), "isr": isr.get(tp, [])}
        if moving != self._moving:
            self._moving = moving
            self.history.add("moves", moving=moving)
