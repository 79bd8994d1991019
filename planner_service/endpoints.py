"""The planner service's REST API: its routes, parameters and JSON views (docs/DESIGN.md
section 6.1 has the contract), served by :mod:`planner_service.http_server`.

Endpoints: GET /state, GET /load, GET /proposals, POST /rebalance, POST /remove_broker?brokerid=,
POST /add_broker?brokerid=, POST /fix_rack_violations. POSTs are dry runs unless
``dryrun=false``. Errors are JSON: 400 bad parameter, 404 unknown path, 405 wrong method,
409 a reassignment is running, 503 the model is not ready.

:class:`RestApi` is mixed into :class:`planner_service.service.PlannerService`: it reads the
service's model, feed, proposal, executions, self-healing actions, Spark state and options, and
plans and executes through the service's ``plan``, ``current_proposal`` and ``execute``.
"""

from __future__ import annotations

from planner_service.http_server import HttpError


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
        }

    def admin_view(self) -> dict:
        """How executions reach the controller (never the password)."""
        sec = self.opts.security
        return {"bootstrap": self.opts.bootstrap, "security_protocol": self._security_protocol(),
                "sasl_mechanism": getattr(sec, "mechanism", None), "sasl_username": getattr(sec, "username", None)}

    @staticmethod
    def _proposal_view(p: dict) -> dict:
        r = p["result"]
        return {"mode": p["mode"], "model_version": p["model_version"], "computed_ms": p["computed_ms"],
                "seconds": p["seconds"], "tasks_ran": p["tasks_ran"], "reassignment": r.reassignment,
                "report": r.report, "waves": [{"wave": w["wave"], "kind": w["kind"], "moves": w["moves"],
                                               "bytes": w["bytes"], "partitions": len(w["partitions"])}
                                              for w in r.batches["waves"]]}

    async def handle(self, method: str, path: str, query: dict) -> tuple[int, dict]:
        routes = {"/state": ("GET", set()), "/load": ("GET", set()), "/proposals": ("GET", set()),
                  "/rebalance": ("POST", {"dryrun", "throttle", "brokerid", "topics"}),
                  "/remove_broker": ("POST", {"brokerid", "dryrun", "throttle"}),
                  "/add_broker": ("POST", {"brokerid", "dryrun", "throttle"}),
                  "/fix_rack_violations": ("POST", {"dryrun", "throttle"})}
        if path not in routes:
            raise HttpError(404, f"no endpoint {path} (endpoints: {', '.join(sorted(routes))})")
        want, allowed = routes[path]
        if method != want:
            raise HttpError(405, f"{path} takes {want}, not {method}")
        unknown = sorted(set(query) - allowed)
        if unknown:
            raise HttpError(400, f"unknown parameter {unknown[0]!r} for {path}"
                            f" (allowed: {', '.join(sorted(allowed)) or 'none'})")
        if path == "/state":
            return 200, self.state_view()
        self._require_ready()
        if path == "/load":
            return 200, {"model_version": self.model.version, "brokers": self.model.load()}
        if path == "/proposals":
            return 200, self._proposal_view(await self.current_proposal())
        dryrun = _bool(query.get("dryrun", "true"), "dryrun")
        throttle = _positive(query["throttle"], "throttle") if "throttle" in query else self.opts.throttle
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
        else:
            if "brokerid" not in query:
                raise HttpError(400, f"{path} needs brokerid=ID[,ID...]")
            ids = _ids(query["brokerid"])
            mode = "decommission" if path == "/remove_broker" else "add-brokers"
            kwargs = {"brokers": ids}
        if not dryrun:
            why = self._conflict()  # before planning: a refused request costs no plan
            if why:
                raise HttpError(409, why)
        if path == "/rebalance" and not kwargs and throttle == self.opts.throttle:
            planned = await self.current_proposal()
        else:
            planned = await self.plan(mode, throttle=throttle, **kwargs)
        body = {"dryrun": dryrun, "proposal": self._proposal_view(planned)}
        if not dryrun:
            body["execution"] = (await self.execute(planned, f"POST {path}", "api", throttle)).view()
        return 200, body


def _bool(text: str, name: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "1", "yes"):
        return True
    if low in ("false", "0", "no"):
        return False
    raise HttpError(400, f"{name} must be true or false, got {text!r}")


def _positive(text: str, name: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise HttpError(400, f"{name} must be a positive integer, got {text!r}")
    return int(text)


def _ids(text: str) -> list[int]:
    out = []
    for x in text.split(","):
        x = x.strip()
        if not x.isdigit():
            raise HttpError(400, f"brokerid must be comma-separated non-negative integers, got {text!r}")
        if int(x) in out:
            raise HttpError(400, f"brokerid lists broker {x} twice")
        out.append(int(x))
    return out
