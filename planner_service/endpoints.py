"""The planner service's REST API: its routes, parameters and JSON views (docs/DESIGN.md
section 6.1 has the contract), served by :mod:`planner_service.http_server`.

Endpoints: GET (and HEAD) /state, /load, /proposals, POST /rebalance, POST /remove_broker?brokerid=,
POST /add_broker?brokerid=, POST /fix_rack_violations, POST /demote_broker?brokerid=, POST
/rebalance_disk[?brokerid=] (moves between each broker's log directories), POST
/topic_configuration?topic=REGEX&replication_factor=N[&skip_rack_awareness_check=] (the matching
topics' replication factor, :mod:`planner_service.topic_config`), POST
/stop_proposal_execution, POST /admin?drop_recently_demoted_brokers=. POSTs are dry runs unless ``dryrun=false``. Every planning endpoint takes Cruise Control's
``excluded_topics`` (regex), ``excluded_brokers_for_replica_move`` (not /topic_configuration) and
``exclude_recently_demoted_brokers``; the POSTs also
``concurrent_partition_movements_per_broker``, ``max_partition_movements_in_cluster``,
``replication_throttle`` (or ``throttle``), ``replica_movement_strategies`` and ``deadline_s``, and ``proposal_id=N`` executes the
reviewed proposal N as planned (Strimzi's approve). Errors are JSON: 400 bad parameter, 404
unknown path, 405 wrong method (with ``Allow``), 409 a reassignment is running or the cluster
changed since the reviewed proposal, 503 the model is not ready, or an execution asked while the
ZooKeeper session is down (with ``Retry-After``).

:class:`RestApi` is mixed into :class:`planner_service.service.PlannerService`: it reads the
service's model, feed, proposal, executions, self-healing actions, Spark state and options, and
plans and executes through the service's ``plan``, ``current_proposal`` and ``execute``.
"""

from __future__ import annotations

import re

from planner_service.clock import now_ms
from planner_service.controller_caps import clamp, read_caps
from planner_service.http_server import HttpError
from planner_service.scope import Scope
from planner_service.topic_config import TopicConfigError, check_brokers, select_topics, summary
from znodes import strategies

# Cruise Control's names. Scope: what a plan may move (every planning endpoint); wave shaping:
# how the plan is cut and run (the POSTs); the reviewed proposal's own parameters cannot be
# given again with proposal_id.
SCOPE_PARAMS = {"excluded_topics", "excluded_brokers_for_replica_move", "exclude_recently_demoted_brokers"}
EXECUTION_PARAMS = {"concurrent_partition_movements_per_broker", "max_partition_movements_in_cluster",
                    "replication_throttle", "throttle", "deadline_s", "proposal_id", "replica_movement_strategies"}
# Cruise Control's topic_configuration parameters (its replication-factor change), besides the
# POSTs' own. Its skip_rack_awareness_check defaults to false: a replication factor above the
# number of racks is refused unless asked for.
TOPIC_CONFIGURATION_PARAMS = {"topic", "replication_factor", "skip_rack_awareness_check"}
DEFAULT_SKIP_RACK_AWARENESS_CHECK = False
# Cruise Control's force_stop default: the running wave finishes, nothing more starts.
DEFAULT_FORCE_STOP = False
# A route's method -> what a 405 lists in Allow (RFC 9110 15.5.6): a GET route takes HEAD too
# (RFC 9110 9.3.2), answered as its GET and sent without the body.
ALLOW = {"GET": "GET, HEAD", "POST": "POST"}


class RestApi:
    """The routes and views of :class:`~planner_service.service.PlannerService` (a mixin)."""

    def state_view(self) -> dict:
        m, f = self.model, self.feed
        p = self.proposal
        proposal = None
        if p is not None:
            r = p["result"].report
            proposal = {"model_version": p["model_version"], "current": p["model_version"] == m.version,
                        "computed_ms": p["computed_ms"], "seconds": p["seconds"], "tasks_ran": p["tasks_ran"],
                        "moves": r["moves"], "lower_bound": r["lower_bound"], "fair": r["fair"],
                        "partitions_changed": r["partitions_changed"], "waves": r["waves"]}
        ex = self.execution.view() if self.execution is not None else None
        if ex is not None:
            # What is left to copy, as the model's sizes see it (the dashboard's progress and ETA).
            left = self.model.bytes_to_copy(self.execution.remaining_targets())
            ex["bytes_remaining"] = left
            ex["eta_s"] = self.execution.note_copy(now_ms(), left) if ex["state"] == "running" else None
        return {
            "model": {
                "ready": f.ready, "connected": f.connected, "version": m.version,
                "changed_ms": int(m.changed_at * 1000) if m.changed_at else None,
                "last_sync_ms": f.last_sync_ms, "syncs": f.syncs, "disconnects": f.disconnects,
                "last_error": f.last_error, "brokers": sorted(m.brokers), "topics": len(m.topics),
                "partitions": m.n_partitions, "gone_brokers_with_replicas": m.gone_holders(),
                "reassignment_running": m.reassignment_running(), "counts_fair": m.counts_fair(),
                "sizes": self.sizes_state, "states_in_bulk": f.bulk_states,
            },
            "proposal": proposal,
            "execution": ex,
            "executions": self.executions,
            "self_healing": {"enabled": list(self.opts.self_healing),
                             "broker_failure_grace_s": self.opts.broker_failure_grace_s,
                             "min_interval_s": self.opts.healing_min_interval_s, "actions": self.healing},
            "spark": self.spark_state,
            "admin": self.admin_view(),
            "recently_demoted_brokers": self.recently_demoted(),
        }

    def admin_view(self) -> dict:
        """How executions reach the controller (never the password)."""
        sec = self.opts.security
        return {"bootstrap": self.opts.bootstrap, "security_protocol": self._security_protocol(),
                "sasl_mechanism": getattr(sec, "mechanism", None), "sasl_username": getattr(sec, "username", None)}

    @staticmethod
    def _proposal_view(p: dict) -> dict:
        r = p["result"]
        return {"proposal_id": p["proposal_id"], "mode": p["mode"], "model_version": p["model_version"],
                "layout_version": p["layout_version"], "computed_ms": p["computed_ms"],
                "seconds": p["seconds"], "tasks_ran": p["tasks_ran"], "reassignment": r.reassignment,
                "report": r.report, "waves": [{"wave": w["wave"], "kind": w["kind"], "moves": w["moves"],
                                               "bytes": w["bytes"], "partitions": len(w["partitions"])}
                                              for w in r.batches["waves"]]}

    async def handle(self, method: str, path: str, query: dict) -> tuple[int, dict]:
        posts = SCOPE_PARAMS | EXECUTION_PARAMS | {"dryrun"}
        routes = {"/state": ("GET", set()), "/load": ("GET", set()), "/proposals": ("GET", SCOPE_PARAMS),
                  "/rebalance": ("POST", posts | {"brokerid", "topics"}),
                  "/remove_broker": ("POST", posts | {"brokerid"}),
                  "/add_broker": ("POST", posts | {"brokerid"}),
                  "/fix_rack_violations": ("POST", posts),
                  "/topic_configuration": ("POST", posts | TOPIC_CONFIGURATION_PARAMS),
                  # Cruise Control's demote_broker: reorders and elections, nothing to scope or throttle
                  "/demote_broker": ("POST", {"brokerid", "dryrun", "deadline_s", "proposal_id"}),
                  # Cruise Control's rebalance_disk: moves inside brokers, no controller caps or throttle
                  "/rebalance_disk": ("POST", {"brokerid", "dryrun", "deadline_s", "proposal_id"}),
                  "/stop_proposal_execution": ("POST", {"force_stop"}),
                  # Cruise Control's admin endpoint, its part that this service has
                  "/admin": ("POST", {"drop_recently_demoted_brokers"})}
        if path not in routes:
            raise HttpError(404, f"no endpoint {path} (endpoints: {', '.join(sorted(routes))})")
        want, allowed = routes[path]
        if method != want and not (method == "HEAD" and want == "GET"):
            raise HttpError(405, f"{path} takes {want}, not {method}", headers={"Allow": ALLOW[want]})
        unknown = sorted(set(query) - allowed)
        if unknown:
            raise HttpError(400, f"unknown parameter {unknown[0]!r} for {path}"
                            f" (allowed: {', '.join(sorted(allowed)) or 'none'})")
        if path == "/state":
            return 200, self.state_view()
        if path == "/stop_proposal_execution":
            force = _bool(query.get("force_stop", str(DEFAULT_FORCE_STOP)), "force_stop")
            ex = self.stop_execution(force)
            return 200, {"force_stop": force, "execution": ex.view() if ex is not None else None,
                         "message": "no execution is running" if ex is None else
                         (f"execution {ex.id}: the running wave is being rolled back (KIP-236), no more waves start"
                          if force else f"execution {ex.id}: the running wave finishes, no more waves start")}
        if path == "/admin":
            if "drop_recently_demoted_brokers" not in query:
                raise HttpError(400, "/admin needs drop_recently_demoted_brokers=ID[,ID...]")
            dropped = self.drop_recently_demoted(_ids(query["drop_recently_demoted_brokers"],
                                                      "drop_recently_demoted_brokers"))
            return 200, {"dropped": dropped, "recently_demoted_brokers": self.recently_demoted()}
        self._require_ready()
        if path == "/load":
            return 200, {"model_version": self.model.version, "brokers": self.model.load()}
        scope = _scope(query)
        # Cruise Control's exclude_recently_demoted_brokers (default false): those brokers lead
        # nothing the plan orders.
        demoted = (self.recently_demoted() if _bool(query.get("exclude_recently_demoted_brokers", "false"),
                                                    "exclude_recently_demoted_brokers") else [])
        leadership = {"leaders_excluded": demoted} if demoted else {}
        if path == "/proposals":
            if scope is None and not leadership:
                return 200, self._proposal_view(await self.current_proposal())
            return 200, self._proposal_view(await self.plan(
                "rebalance", scope=scope, request={"path": "/rebalance", "params": dict(query)}, **leadership))
        dryrun = _bool(query.get("dryrun", "true"), "dryrun")
        deadline_s = _positive(query["deadline_s"], "deadline_s") if "deadline_s" in query else None
        if "proposal_id" in query:
            return await self._reviewed(path, query, dryrun, deadline_s)
        if path == "/demote_broker":
            return await self._demote(query, dryrun, deadline_s)
        if path == "/rebalance_disk":
            return await self._rebalance_disk(query, dryrun, deadline_s)
        if "throttle" in query and "replication_throttle" in query:
            raise HttpError(400, "give replication_throttle or throttle (the same setting), not both")
        throttle_text = query.get("replication_throttle", query.get("throttle"))
        name = "replication_throttle" if "replication_throttle" in query else "throttle"
        throttle = _positive(throttle_text, name) if throttle_text is not None else self.opts.throttle
        per_broker = (_positive(query["concurrent_partition_movements_per_broker"],
                                "concurrent_partition_movements_per_broker")
                      if "concurrent_partition_movements_per_broker" in query else None)
        cluster_cap = (_positive(query["max_partition_movements_in_cluster"], "max_partition_movements_in_cluster")
                       if "max_partition_movements_in_cluster" in query else None)
        strategies = _strategies(query)
        selection = skip_racks = None
        if path == "/rebalance":
            mode, kwargs = "rebalance", {}
            if "brokerid" in query:  # the broker set to balance over (default: every broker)
                kwargs["broker_list"] = _ids(query["brokerid"])
            if "topics" in query:
                kwargs["topics"] = [t for t in query["topics"].split(",") if t]
                if not kwargs["topics"]:
                    raise HttpError(400, "topics must name at least one topic")
        elif path == "/fix_rack_violations":
            mode, kwargs = "rebalance", {"fix_racks": True}
        elif path == "/topic_configuration":
            selection, skip_racks = self._topic_configuration(query)
            mode = "replication-factor"
            # scoped to the topics that change: the others, those already at the replication
            # factor asked for included, are not seen by the planner and stay as they are
            kwargs = {"topics": selection.to_change, "replication_factor": selection.replication_factor}
            if not selection.to_change:
                scope = None  # nothing is planned: exclusions have nothing to act on
        else:
            if "brokerid" not in query:
                raise HttpError(400, f"{path} needs brokerid=ID[,ID...]")
            ids = _ids(query["brokerid"])
            mode = "decommission" if path == "/remove_broker" else "add-brokers"
            kwargs = {"brokers": ids}
        kwargs.update(leadership)
        if not dryrun:
            await self.refuse_execution()  # before planning: a refused request costs no plan
        concurrency = None
        if per_broker is not None:  # each wave: at most N moves into and N out of any broker
            # ... and never more than the active controller's own per-broker caps, when readable
            per_broker, concurrency = clamp(per_broker, await read_caps(self.opts.controller_ops))
            kwargs["max_in"] = kwargs["max_out"] = per_broker
        execution = {"throttle": throttle, "cluster_cap": cluster_cap, "movement_strategies": strategies}
        # The cached proposal answers a plain rebalance only: a cap is part of what is reviewed.
        if path == "/rebalance" and not kwargs and throttle == self.opts.throttle and scope is None \
                and cluster_cap is None and strategies is None:
            planned = await self.current_proposal()
        else:
            request = {"path": path, "params": {k: v for k, v in query.items() if k not in ("dryrun", "deadline_s")},
                       **execution}
            planned = await self.plan(mode, scope=scope, request=request, throttle=throttle, **kwargs)
        if selection is not None:  # kept in the proposal's report: a reviewed id shows it again
            planned["result"].report["topic_configuration"] = summary(selection, planned["result"].moves,
                                                                      skip_rack_awareness_check=skip_racks)
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if concurrency is not None:
            body["concurrency"] = concurrency
        if not dryrun:
            body["execution"] = (await self.execute(planned, f"POST {path}", "api", throttle, cluster_cap,
                                                    deadline_s, movement_strategies=strategies)).view()
        return 200, body

    def _topic_configuration(self, query: dict):
        """POST /topic_configuration's own parameters, checked against the model as Cruise
        Control checks them: (the topics selected, skip_rack_awareness_check); 400 naming what
        is wrong."""
        for name in ("topic", "replication_factor"):
            if name not in query:
                raise HttpError(400, "/topic_configuration needs topic=REGEX (whole topic names) and "
                                     f"replication_factor=N; {name} is missing")
        if "excluded_brokers_for_replica_move" in query:
            # The planner's replication-factor mode sets one replication factor for every
            # partition it sees; a replica hidden on an excluded broker would count on top of it.
            raise HttpError(400, "/topic_configuration takes no excluded_brokers_for_replica_move (Cruise Control's "
                                 "takes none either): the replicas hidden on those brokers would come on top of "
                                 "the replication factor asked for")
        pattern = _regex(query, "topic")
        rf = _positive(query["replication_factor"], "replication_factor")
        skip = _bool(query.get("skip_rack_awareness_check", str(DEFAULT_SKIP_RACK_AWARENESS_CHECK)),
                     "skip_rack_awareness_check")
        # each partition's replication factor as the planner counts it: its target replicas
        rfs = {t: [len([r for r in a.replicas if r not in a.removing]) for a in parts.values()]
               for t, parts in self.model.topics.items()}
        try:
            selection = select_topics(rfs, pattern, rf)
            if "excluded_topics" in query:  # a topic to change that may not move: a contradiction
                excluded = _regex(query, "excluded_topics")
                both = [t for t in selection.to_change if excluded.fullmatch(t) is not None]
                if both:
                    raise TopicConfigError(f"topic {both[0]!r} matches both topic ({pattern.pattern!r}) and "
                                           f"excluded_topics ({excluded.pattern!r})")
            if selection.to_change:  # topics already at it are unchanged whatever the brokers
                check_brokers({b: r.rack for b, r in self.model.brokers.items()}, rf,
                              skip_rack_awareness_check=skip, topics=selection.to_change)
        except TopicConfigError as e:
            raise HttpError(400, str(e)) from None
        return selection, skip

    async def _demote(self, query: dict, dryrun: bool, deadline_s: int | None) -> tuple[int, dict]:
        """POST /demote_broker?brokerid=ID[,ID...]: every leadership off those brokers, no data
        moved (spark_jobs.demote); executed, the reorders go as one wave, then the elections."""
        if "brokerid" not in query:
            raise HttpError(400, "/demote_broker needs brokerid=ID[,ID...]")
        ids = _ids(query["brokerid"])
        if not dryrun:
            await self.refuse_execution()
        planned = self.demote(ids, {"path": "/demote_broker", "params": {"brokerid": query["brokerid"]}})
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if not dryrun:
            body["execution"] = (await self.execute(planned, "POST /demote_broker", "api", None, None,
                                                    deadline_s)).view()
        return 200, body

    async def _rebalance_disk(self, query: dict, dryrun: bool, deadline_s: int | None) -> tuple[int, dict]:
        """POST /rebalance_disk[?brokerid=ID,...]: each broker's log directories evened out by
        moves inside it (spark_jobs.disks); executed, AlterReplicaLogDirs to the brokers."""
        ids = _ids(query["brokerid"]) if "brokerid" in query else None
        if not dryrun:
            await self.refuse_execution()
        params = {"brokerid": query["brokerid"]} if "brokerid" in query else {}
        planned = await self.rebalance_disk(ids, {"path": "/rebalance_disk", "params": params})
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if not dryrun:
            body["execution"] = (await self.execute(planned, "POST /rebalance_disk", "api", None, None,
                                                    deadline_s)).view()
        return 200, body

    async def _reviewed(self, path: str, query: dict, dryrun: bool, deadline_s: int | None) -> tuple[int, dict]:
        """``proposal_id=N``: the reviewed proposal N, executed as planned (with ``dryrun=false``)
        or shown again; 409 when the cluster changed since it was planned."""
        given = sorted(set(query) - {"proposal_id", "dryrun", "deadline_s"})
        if given:
            raise HttpError(400, f"proposal_id executes the reviewed proposal as it was planned: {given[0]!r} "
                                 "is part of it and cannot be given again")
        pid = _positive(query["proposal_id"], "proposal_id")
        if not dryrun:
            await self.refuse_execution()
        planned = self.reviewed(pid, path)
        if not dryrun and planned["mode"] == "rebalance_disk":
            await self.disk_proposal_stands(planned, pid)
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if not dryrun:
            req = planned["request"]
            throttle = req.get("throttle", self.opts.throttle)
            body["execution"] = (await self.execute(planned, f"POST {path}?proposal_id={pid}", "api", throttle,
                                                    req.get("cluster_cap"), deadline_s,
                                                    movement_strategies=req.get("movement_strategies"))).view()
        return 200, body


def _bool(text: str, name: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise HttpError(400, f"{name} must be true or false, got {text!r}")


# Throttles, deadlines and counts are int64 on the wire and in Kafka's configs, broker ids int32.
INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1


def _digits(text: str) -> int | None:
    """``text`` as a non-negative integer when it is ASCII digits only (str.isdigit takes "²"
    and other Unicode digits, which int() then refuses), else None."""
    if not text.isascii() or not text.isdigit() or len(text) > 19:
        return None
    return int(text)


def _positive(text: str, name: str) -> int:
    value = _digits(text)
    if value is None or not 1 <= value <= INT64_MAX:
        raise HttpError(400, f"{name} must be a positive integer up to {INT64_MAX}, got {text!r}")
    return value


def _strategies(query: dict) -> tuple[str, ...] | None:
    """Cruise Control's ``replica_movement_strategies`` (a comma list): the order in which the
    controller starts each wave's moves (controller.core.move_order), carried by every
    reassignment the execution sends; None: the controller's own setting."""
    if "replica_movement_strategies" not in query:
        return None
    try:
        return strategies.parse(query["replica_movement_strategies"])
    except strategies.StrategyError as e:
        raise HttpError(400, f"replica_movement_strategies: {e}") from None


def _regex(query: dict, name: str) -> re.Pattern:
    """``query[name]``, a regular expression over whole topic names (Cruise Control's
    ``excluded_topics`` and ``topic``, matched as Java's ``matches``: callers fullmatch it);
    400 naming the parameter and the text when it is empty or not a regular expression."""
    text = query[name]
    if not text:
        raise HttpError(400, f"{name} must be a regular expression, got an empty one")
    try:
        return re.compile(text)
    except re.error as e:
        raise HttpError(400, f"{name} is not a regular expression: {text!r}: {e}") from None


def _scope(query: dict) -> Scope | None:
    """excluded_topics (a regular expression over whole topic names) and
    excluded_brokers_for_replica_move (broker ids); None when neither is given."""
    pattern = _regex(query, "excluded_topics") if "excluded_topics" in query else None
    brokers = frozenset()
    if "excluded_brokers_for_replica_move" in query:
        brokers = frozenset(_ids(query["excluded_brokers_for_replica_move"], "excluded_brokers_for_replica_move"))
    if pattern is None and not brokers:
        return None
    return Scope(pattern, brokers)


def _ids(text: str, name: str = "brokerid") -> list[int]:
    out = []
    for x in text.split(","):
        value = _digits(x.strip())
        if value is None or value > INT32_MAX:
            raise HttpError(400, f"{name} must be comma-separated broker ids (0 to {INT32_MAX}), got {text!r}")
        if value in out:
            raise HttpError(400, f"{name} lists broker {value} twice")
        out.append(value)
    return out
