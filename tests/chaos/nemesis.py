"""The nemesis: one fault at a time, injected at a random moment, held, then healed.

Faults (each recorded as ``{"type": "fault", "id", "kind", "target", "t0", "t_heal", ...}``):

``kill_active``      SIGKILL the active controller; start it again a moment later
``zombie``           SIGSTOP the active controller past its ZooKeeper session timeout, then
                     SIGCONT: it wakes deposed and must write nothing (the epoch fence)
``broker_restart``   stop a simulated broker (its session and listener go), start it again once
                     the hold is over and a settled snapshot is recorded (tests/chaos/settle.py:
                     every partition with a live in-sync replica led by a live broker); every
                     other one (even fault ids: no draw of its own, so a seed's schedule stays)
                     stops with Kafka's controlled shutdown first (sim ``controlled-stop``:
                     ControlledShutdown to the active controller, whatever the faults do to it)
``zk_restart``       SIGKILL one ZooKeeper server and restart it (the quorum holds)
``zk_no_quorum``     SIGKILL two of the three servers for a few seconds, then restart them
``proxy_cut``        cut a controller's links to every ZooKeeper server (mostly the active one's)
``proxy_delay``      delay them
``proxy_blackhole``  blackhole them (sometimes past the session timeout)
``controller_moved`` slow the active controller's links, then delete ``/controller`` as an operator
                     forcing a controller move does: another controller is elected while the old
                     one's session lives and its slowed writes are still on the way, so they reach
                     ZooKeeper after the new epoch - the case only the epoch fence stops. In the
                     break-fence self-test (``deposed_write``) the old controller is also sent a
                     request once the new epoch began, so that it surely writes as a zombie

Every choice comes from the run's one ``random.Random(seed)``.

    nemesis = Nemesis(cluster, history, rng)
    fault = await nemesis.strike()      # injects, holds and heals one fault; returns its record
"""

from __future__ import annotations

import asyncio
import random
import time

from tests.chaos.cluster import CONTROLLER_IDS, SESSION_TIMEOUT_S
from tests.chaos.history import History
from tests.chaos.settle import record_settled

# How late the old controller hears ZooKeeper: below kazoo's shortest ping deadline (a third of
# the 4 s session, less up to 0.4 s of jitter), so its link to ZooKeeper holds.
DEPOSED_WRITE_DELAY_S = 0.7

FAULTS = {  # kind -> weight
    "kill_active": 3, "zombie": 3, "broker_restart": 3, "zk_restart": 2, "zk_no_quorum": 2,
    "proxy_cut": 2, "proxy_delay": 2, "proxy_blackhole": 2, "controller_moved": 4,
}


class Nemesis:
    def __init__(self, cluster, history: History, rng: random.Random, faults: dict[str, int] | None = None,
                 deposed_write=None):
        self.cluster = cluster
        # The break-fence self-test's: ``await deposed_write(cid, ready, go)`` sets ``ready``,
        # then on ``go`` sends controller ``cid`` a request it writes for (_controller_moved).
        self.deposed_write = deposed_write
        self.faults = faults or FAULTS  # kind -> weight
        self.history = history
        self.rng = rng
        self.next_id = 0
        self.counts: dict[str, int] = {}

    def _victim(self) -> int:
        """The active controller, or (one time in five, or with none) any other one."""
        # Both draws always happen, so the schedule's later draws do not depend on the cluster.
        anyone, other = self.rng.random() < 0.2, self.rng.choice(CONTROLLER_IDS)
        active = self.cluster.active_controller()
        return other if active is None or anyone else active

    async def strike(self, kind: str | None = None) -> dict:
        kind = kind or self.rng.choices(list(self.faults), weights=list(self.faults.values()))[0]
        self.next_id += 1
        self.counts[kind] = self.counts.get(kind, 0) + 1
        fault = {"id": self.next_id, "kind": kind}
        fault["t0"] = time.time()
        await getattr(self, f"_{kind}")(fault)
        fault["t_heal"] = time.time()
        self.history.add("fault", **fault)
        return fault

    async def _hold(self, low: float, high: float, fault: dict) -> None:
        fault["held_s"] = round(self.rng.uniform(low, high), 2)
        await asyncio.sleep(fault["held_s"])

    async def _kill_active(self, fault: dict) -> None:
        cid = fault["target"] = self._victim()
        await asyncio.to_thread(self.cluster.kill_controller, cid)
        await self._hold(0.2, 3.0, fault)
        self.cluster.start_controller(cid)

    async def _zombie(self, fault: dict) -> None:
        cid = fault["target"] = self._victim()
        self.cluster.pause_controller(cid)
        # Past the session timeout: ZooKeeper expires the session and another controller wins.
        await self._hold(SESSION_TIMEOUT_S + 1.0, SESSION_TIMEOUT_S + 4.0, fault)
        self.cluster.resume_controller(cid)

    async def _broker_restart(self, fault: dict) -> None:
        broker = fault["target"] = self.rng.choice(self.cluster.broker_ids)
        if fault["id"] % 2 == 0:
            answer = await asyncio.to_thread(self.cluster.controlled_stop_broker, broker)
            fault["controlled"], fault["remaining"] = answer["controlled"], answer["remaining"]
        else:
            await asyncio.to_thread(self.cluster.stop_broker, broker)
        await self._hold(0.5, 5.0, fault)
        await record_settled(self.cluster, self.history, fault_id=fault["id"], why="broker_down", hosted=False)
        await asyncio.to_thread(self.cluster.start_broker, broker)

    async def _zk_restart(self, fault: dict) -> None:
        member = fault["target"] = self.rng.choice([m.id for m in self.cluster.zk.members])
        await asyncio.to_thread(self.cluster.zk.kill_member, member)
        await self._hold(0.5, 4.0, fault)
        await asyncio.to_thread(self.cluster.zk.restart_member, member)

    async def _zk_no_quorum(self, fault: dict) -> None:
        members = self.rng.sample([m.id for m in self.cluster.zk.members], 2)
        fault["target"] = members
        for m in members:
            await asyncio.to_thread(self.cluster.zk.kill_member, m)
        await self._hold(1.0, 4.0, fault)
        # One after the other (the launcher is not thread-safe): the first back and the survivor
        # make a quorum again, which restart_member waits for; then the second rejoins.
        for m in members:
            await asyncio.to_thread(self.cluster.zk.restart_member, m)

    async def _proxy(self, fault: dict, mode: str, low: float, high: float, delay_s: float = 0.0) -> None:
        cid = fault["target"] = self._victim()
        if delay_s:
            fault["delay_s"] = delay_s
        group = self.cluster.proxies[cid]
        await asyncio.to_thread(group.set_mode, mode, delay_s)
        try:
            await self._hold(low, high, fault)
        finally:
            await asyncio.to_thread(group.set_mode, "pass")

    async def _proxy_cut(self, fault: dict) -> None:
        await self._proxy(fault, "cut", 0.5, SESSION_TIMEOUT_S + 3.0)

    async def _proxy_delay(self, fault: dict) -> None:
        await self._proxy(fault, "delay", 2.0, 8.0, delay_s=round(self.rng.uniform(0.1, 1.5), 2))

    async def _proxy_blackhole(self, fault: dict) -> None:
        await self._proxy(fault, "blackhole", 1.0, SESSION_TIMEOUT_S + 4.0)

    async def _controller_moved(self, fault: dict) -> None:
        fallback = self.rng.choice(CONTROLLER_IDS)
        cid = fault["target"] = self.cluster.active_controller() or fallback
        delay = fault["delay_s"] = round(self.rng.uniform(0.3, 1.5), 2)
        if self.deposed_write is not None:
            await self._controller_moved_with_write(fault, cid)
            return
        group = self.cluster.proxies[cid]
        await asyncio.to_thread(group.set_mode, "delay", delay)
        try:
            await asyncio.to_thread(self.cluster.delete_controller_znode)
            await self._hold(1.0, 4.0, fault)
        finally:
            await asyncio.to_thread(group.set_mode, "pass")

    async def _controller_moved_with_write(self, fault: dict, cid: int) -> None:
        """The break-fence self-test's controller move, its zombie write not left to chance: the
        old controller hears ZooKeeper ``DEPOSED_WRITE_DELAY_S`` late (its writes arrive at
        once), so after ``/controller`` is deleted it still takes requests as the active one
        for that long. Once the new controller has bumped ``/controller_epoch`` the old one is
        sent a request; it writes with its old epoch, after the new one began."""
        fault["delay_s"] = DEPOSED_WRITE_DELAY_S
        fault["mode"] = "delay_down"
        ready, go = asyncio.Event(), asyncio.Event()
        write = asyncio.create_task(self.deposed_write(cid, ready, go))
        await ready.wait()
        group = self.cluster.proxies[cid]
        zk = self.cluster.kazoo
        await asyncio.to_thread(group.set_mode, "delay_down", DEPOSED_WRITE_DELAY_S)
        try:
            before = (await asyncio.to_thread(zk.get, "/controller_epoch"))[1].version
            await asyncio.to_thread(self.cluster.delete_controller_znode)
            deadline = time.monotonic() + DEPOSED_WRITE_DELAY_S / 2
            while time.monotonic() < deadline:
                if (await asyncio.to_thread(zk.get, "/controller_epoch"))[1].version > before:
                    break
                await asyncio.sleep(0.005)
            fault["new_epoch_after_s"] = round(time.time() - fault["t0"], 3)
            go.set()
            await self._hold(1.0, 4.0, fault)
            fault["deposed_write"] = await write
        finally:
            go.set()
            await asyncio.to_thread(group.set_mode, "pass")
