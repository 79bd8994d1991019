"""Admin requests as engine events, the shell's half: submit, read what the step needs, answer.

An admin handler (controller.shell.admin.kip179, kip455_alter) makes a ReassignRequested or
ThrottleRequested (controller.core.events) and awaits :func:`submit`. The active controller's
loop takes the event with everything else queued (one writer: controller.shell.active), and
before the step :func:`prepare` reads what the engine cannot know from its state - the throttle
configs and removal znodes the request changes, topics it names that a tool created a moment ago,
their ``min.insync.replicas``. After the step's flush, :func:`answer` resolves each request's
future; :func:`fail` when the flush did not land.

    results = await submit(active, ReassignRequested(targets, throttle=1000), timeout_s=30)

A request is answered only once its writes landed (an acknowledged request is never lost);
"retry" (a conflict with a writer outside this controller, or a znode the step needed and the
read missed) takes it again with fresh reads, at most ``RETRIES`` times; a controller deposed or
failing before its flush landed raises :class:`NotRecorded`, which the handlers answer
NOT_CONTROLLER.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

from controller.core.admin_requests import Answer, throttle_reads_needed
from controller.core.events import (
    ReassignRequested,
    ThrottleRequested,
    ThrottlesRead,
    TopicsRead,
    TopicsRequested,
    TopicsSeen,
)
from controller.core.throttle_writes import config_path
from controller.shell.throttles import config_reads, decode_listed
from controller.shell.zkread import read_topics, topic_ids_to_give
from znodes import paths
from znodes.reads import children_or_empty, get_many

# A request that lost a race with a writer outside this controller (a tool rewrote
# /admin/reassign_partitions, a standby's AlterConfigs) is taken again with fresh reads this many
# times before it is answered as failed: each retry costs one step.
RETRIES = 5
REMOVAL_PATHS = (paths.THROTTLED_REPLICAS_REMOVAL, paths.THROTTLED_RATES_REMOVAL)
ADMIN_EVENTS = (ReassignRequested, ThrottleRequested, TopicsRequested)


class NotRecorded(Exception):
    """The request's writes did not land: nothing of it is taken beyond the documented prefix.
    ``retry``: they lost a race (or the step lacked a read) and may be taken again."""

    def __init__(self, message: str, retry: bool = False, cause: BaseException | None = None):
        super().__init__(message)
        self.retry = retry
        self.cause = cause  # the flush's failure (a lost connection leaves the outcome unknown)


async def submit(active, event, timeout_s: float):
    """Queue ``event`` on the active controller and wait for its Answer; retries included.
    Raises NotRecorded (deposed, or still racing after RETRIES) and TimeoutError."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout_s):
        for attempt in range(RETRIES + 1):
            future = loop.create_future()
            active.inbox.queue.put_nowait(dataclasses.replace(event, token=future, read=None))
            try:
                answer: Answer = await future
            except NotRecorded as e:
                if e.retry and attempt < RETRIES:
                    continue
                raise
            if answer.retry and attempt < RETRIES:
                continue
            if answer.retry:
                raise NotRecorded("the request kept racing with other writers", retry=True)
            return answer
    raise AssertionError("unreachable")


async def prepare(active, events: list) -> list:
    """The reads the step's admin requests need, as events before them, and each request with
    its ThrottlesRead or TopicsSeen."""
    requests = [e for e in events if isinstance(e, ADMIN_EVENTS)]
    if not requests:
        return events
    store, state = active.store, active.state
    out_before: list = []
    # Topics a request names that the controller does not know yet (created a moment ago by a
    # tool): read now, so that the request is judged by ZooKeeper as it is.
    named = {tp[0] for e in requests if isinstance(e, ReassignRequested) for tp, _ in e.targets}
    named |= {tp[0] for e in requests if isinstance(e, ThrottleRequested) and e.kind == "topics" for tp in e.entities}
    named |= {_topic_of(r) for e in requests if isinstance(e, TopicsRequested) and e.kind != "create" for r in e.requests}
    unknown = sorted(n for n in named if n not in state.topic_versions and _valid(("topics", n)))
    if unknown:
        reads, _ = await read_topics(store, unknown)
        found = {n: r for n, r in reads.items() if r is not None}
        if found:
            out_before.append(TopicsRead(found, topic_ids_to_give(found, state.topic_versions)))
    moving = sorted({tp[0] for e in requests if isinstance(e, ReassignRequested) and not e.validate_only
                     for tp, _ in e.targets if _valid(("topics", tp[0]))})
    if moving:
        out_before += await active.read_move_configs(moving)
    throttled = [e for e in requests if isinstance(e, ThrottleRequested)
                 or (isinstance(e, ReassignRequested) and e.throttle is not None and not e.validate_only)]
    filled = {}
    if throttled:
        listed = {p: decode_listed(p, r) for p, r in zip(REMOVAL_PATHS, await get_many(store, list(REMOVAL_PATHS)))}
        members = {p: (r.value.members if r.value is not None else ()) for p, r in listed.items()}
        topics: set[str] = set()
        brokers: set[int] = set()
        for e in throttled:
            t, b = throttle_reads_needed(e, state.assignments, members)
            topics |= t
            brokers |= b
        keys = [k for k in [("topics", t) for t in sorted(topics)] + [("brokers", b) for b in sorted(brokers)]
                if _valid(k)]  # a bad name or id is refused by the engine's checks, never read
        configs = await config_reads(store, keys)
        read = ThrottlesRead(configs, listed)
        for e in throttled:
            filled[id(e)] = dataclasses.replace(e, read=read)
    topic_requests = [e for e in requests if isinstance(e, TopicsRequested)]
    if topic_requests:
        seen = await _topics_seen(active, topic_requests)
        for e in topic_requests:
            filled[id(e)] = dataclasses.replace(e, read=seen)
    return out_before + [filled.get(id(e), e) for e in events]


def _topic_of(request) -> str:
    return request if isinstance(request, str) else request.name


async def _topics_seen(active, requests) -> TopicsSeen:
    store = active.store
    names = frozenset(await children_or_empty(store, paths.TOPICS))
    parent = await store.exists(paths.DELETE_TOPICS) is not None
    markers = frozenset(await children_or_empty(store, paths.DELETE_TOPICS)) if parent else frozenset()
    created = sorted({r.name for e in requests if e.kind == "create" for r in e.requests if _valid(("topics", r.name))})
    existing = frozenset()
    if created:
        stats = await asyncio.gather(*(store.exists(paths.topic_config(n)) for n in created))
        existing = frozenset(n for n, stat in zip(created, stats) if stat is not None)
    replicas, leaders = active.placement_counts.counts(active.state)
    return TopicsSeen(names, markers, parent, existing, replicas, leaders)


def _valid(key) -> bool:
    try:
        config_path(*key)
    except (ValueError, TypeError):
        return False
    return True


def answer(answers) -> None:
    """Their writes landed: resolve each request's future with its Answer."""
    for a in answers:
        if isinstance(a.token, asyncio.Future) and not a.token.done():
            a.token.set_result(a)


def fail(step, error: BaseException, retry: bool) -> None:
    for a in step.answers:
        if isinstance(a.token, asyncio.Future) and not a.token.done():
            a.token.set_exception(NotRecorded(f"the controller could not record the request: {error!r}", retry, error))


def fail_queued(items, why: str = "") -> list:
    """A resigning controller's admin requests not answered yet (queued, or in the batch it was
    taking): answered NOT_CONTROLLER; the other items are returned to be queued again."""
    kept = []
    for item in items:
        if isinstance(item, ADMIN_EVENTS):
            if isinstance(item.token, asyncio.Future) and not item.token.done():
                item.token.set_exception(NotRecorded(f"this controller resigned before taking the request {why}".strip()))
        else:
            kept.append(item)
    return kept


class Seen:
    """What one of the active controller's listener lists (``created_listeners``: partitions
    given their first state; ``deleted_listeners``: topics whose znodes are gone) reports while
    a request is in flight, registered before the request is submitted so nothing is missed.

        with Seen(active.created_listeners) as created:
            answer = await submit(active, event, timeout_s)
            missing = await created.wait_for({("orders", 0)}, timeout_s)
    """

    def __init__(self, listeners: list):
        self.listeners = listeners
        self.got: set = set()
        self._changed = asyncio.Event()

    def __enter__(self) -> Seen:
        self.listeners.append(self._note)
        return self

    def __exit__(self, *exc) -> None:
        self.listeners.remove(self._note)

    def _note(self, items) -> None:
        self.got.update(items)
        self._changed.set()

    async def wait_for(self, wanted, timeout_s: float) -> set:
        """Wait until every item of ``wanted`` was reported or ``timeout_s`` passed; what is missing."""
        wanted = set(wanted)
        try:
            async with asyncio.timeout(max(timeout_s, 0.0)):
                while not wanted <= self.got:
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            pass
        return wanted - self.got


def fail_taken(events, error: BaseException) -> None:
    """Admin requests of a batch whose reads failed before the step: taken again (retry)."""
    for item in events:
        if isinstance(item, ADMIN_EVENTS) and isinstance(item.token, asyncio.Future) and not item.token.done():
            item.token.set_exception(NotRecorded(f"the controller could not read for the request: {error!r}", True, error))
