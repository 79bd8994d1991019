"""``reassignd controller``: one controller instance (several run per cluster, one is active).

Usage::

    reassignd controller --zookeeper 127.0.0.1:2181/kafka --id 101 --listen 127.0.0.1:9190 \\
        [--config controller.toml] [--ops-listen 127.0.0.1:9191] [--log-format json] [--print-config]

Every setting (controller.core.config) is also a ``REASSIGND_<NAME>`` variable and a key of the
TOML file; flags win over the environment, the environment over the file (controller.shell.options).

What it does, in order:

 0. Reads and checks its settings; a bad one exits 2 before any socket or ZooKeeper session.
 1. Binds the admin listener on ``--listen`` at once (port 0 picks a free port) and, once
    connected to ZooKeeper, records it (or ``--advertised-listen``) in the ephemeral
    ``/reassignd/controllers/<id>`` (``{"version":1,"host":h,"port":p}``) so clients can find
    every instance. With ``--ops-listen``, serves /healthz, /readyz and /metrics
    (controller.shell.ops, controller.shell.metrics).
 2. Campaigns (controller.shell.election): one multi-op creates ``/controller`` and bumps
    ``/controller_epoch``. Losers stand by, watching ``/controller``.
 3. The winner runs the active loop (controller.shell.active) until it must resign (fenced, session
    lost); it then stands by again, on a new session if the old one expired.
 4. SIGTERM or SIGINT: an active instance resigns at once (deletes ``/controller`` after its
    last fenced write, so a standby is elected within a second); everything stops within
    ``shutdown_timeout_s`` (5 s by default) and the session is closed.
 5. SIGHUP: the settings are read again; the live ones (caps, log level) apply from the next
    step, a changed setting that needs a restart is logged and kept, a bad file changes nothing.

Exit status: 0 after a signal, 2 for bad arguments or a bad config file, 1 on a fatal error.
"""
from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import os
import signal
import sys
from collections.abc import Callable

from controller.core.config import (ConfigError, ControllerConfig, Resolved, Settings, parse_hostport, reload_changes,
                                    render_toml)
from controller.shell.active import ActiveController
from controller.shell.audit import AuditedStore, open_audit
from controller.shell.admin.base import AdminContext
from controller.shell.admin_audit import AuditedHandler, open_audit_file
from controller.shell.admin.handler import AdminHandler
from controller.shell.copy_progress import CopyProgress, ProgressHistory
from controller.shell.election import active_controller, campaign, release_if_ours
from controller.shell.inbox import Inbox
from controller.shell.journal import MoveJournal, RecordIds
from controller.core.listeners import Listener, advertised_addresses
from controller.shell.listener import ListenerLimits, RequestHandler
from controller.shell.security.config import SecurityConfig
from controller.shell.security.inter_broker import InterBrokerSecurity
from controller.shell.security.listeners import build_listeners
from controller.shell.logs import setup_logging
from controller.shell.metrics import MeteredHandler, MeteredInbox, MeteredStore, Metrics
from controller.shell.ops import OpsServer
from controller.shell.options import broker_listener_named, load_settings, parse_args, unknown_env
from controller.shell.role import Role
from controller.shell.transport import TcpTransport, broker_address
from znodes import paths, secure_paths
from znodes.api import NodeExistsError, NoNodeError, Store, ZkError
from znodes.payloads import encode_listener

log = logging.getLogger("reassignd.controller")

CONTROLLERS_PATH = paths.CONTROLLER_INSTANCES
CONNECT_RETRY_S = 1.0
# On SIGTERM, deleting /controller may take this long before the session close does it anyway.
RESIGN_TIMEOUT_S = 2.0


class InsecureZooKeeperError(Exception):
    """The authorizer is on but others may change the znodes it trusts: the daemon stops."""


def controller_path(controller_id: int) -> str:
    return f"{CONTROLLERS_PATH}/{controller_id}"


class ControllerDaemon:
    def __init__(
        self,
        zookeeper: str,
        controller_id: int,
        listen: tuple[str, int] | list[Listener],
        config: ControllerConfig,
        *,
        handler_factory: Callable[[Role], RequestHandler] | None = None,
        connect: Callable[[], object] | None = None,
        transport_factory: Callable[[Callable[[int], tuple[str, int] | None]], object] | None = None,
        write_audit: str | None = None,
        ops_listen: tuple[str, int] | None = None,
        metrics: Metrics | None = None,
        security: SecurityConfig | None = None,
    ):
        self.zookeeper = zookeeper
        self.controller_id = controller_id
        self.config = config
        self.role = Role(controller_id)
        # One registry per daemon: tests run several daemons in one process.
        self.metrics = metrics or Metrics()
        # The admin API over the table of controller.shell.admin.registry, unless a test swaps it.
        handler = handler_factory(self.role) if handler_factory else AdminHandler(AdminContext(self.role, config))
        handler = MeteredHandler(AuditedHandler(handler), self.metrics)
        # Listeners and their security (controller.shell.security): --security-config, else
        # every listener PLAINTEXT and ZooKeeper unauthenticated.
        self.security = security or SecurityConfig.from_file(getattr(config, "security_config", None))
        specs = listen if isinstance(listen, list) else [Listener("PLAINTEXT", listen[0], listen[1])]
        self.listeners = build_listeners(specs, handler, ListenerLimits.from_config(config), self.security, self.role)
        self.listener = self.listeners[0]  # the one registered and told to clients
        self.metrics.watch(role=self.role, listeners=self.listeners)
        # Bytes remaining over time of the latest reassignment run (GET /progress/history):
        # outlives each active term, so a finished run stays readable after a resignation too.
        self.history = ProgressHistory()
        # Each partition's move: its door, reassignment_id, log lines and counts (controller.shell.journal).
        self.journal = MoveJournal(self.metrics)
        ops_listen = ops_listen or getattr(config, "ops_address", None)
        self.ops = (
            OpsServer(ops_listen[0], ops_listen[1], self.metrics, ready=self.readiness,
                      max_loop_lag_s=getattr(config, "ops_max_loop_lag_s", 1.0), history=self.history,
                      is_active=lambda: self.role.active is not None)
            if ops_listen is not None
            else None
        )
        self._inbox: MeteredInbox | None = None
        self._connect = connect or self._connect_zookeeper
        # The brokers' listener (broker_listener) may be TLS or SASL: checked now, so that a bad
        # setting stops the start rather than every request to a broker.
        to_brokers = InterBrokerSecurity.from_config(self.security, getattr(config, "broker_listener", "PLAINTEXT"))
        self._transport_factory = transport_factory or (
            TcpTransport if to_brokers.protocol == "PLAINTEXT" else functools.partial(TcpTransport, security=to_brokers))
        # Every committed fenced write, one JSON line each (controller.shell.audit): the
        # argument, else the write_audit setting (--write-audit, $REASSIGND_WRITE_AUDIT).
        audit = write_audit or getattr(config, "write_audit", None)
        self._audit = open_audit(audit) if audit else None

    async def _connect_zookeeper(self) -> Store:
        store = await self.security.zk.connect(
            self.zookeeper, session_timeout=self.config.zk_session_timeout_s, create_chroot=True
        )
        try:
            await self._check_trusted_paths(store)
        except BaseException:
            await _close_quietly(store)
            raise
        return store

    async def _check_trusted_paths(self, store) -> None:
        """With ``zookeeper.set.acl`` or the authorizer, create every path the service trusts
        (secure ACLs under set.acl) before anyone else can; then, with the authorizer on,
        refuse to run when anyone but the service may change one of them (ACLs written there
        would be obeyed), else warn. Before the session is used at all: no request is
        authorized against unchecked ACLs."""
        zk = self.security.zk
        if not (zk.set_acl or self.security.authorizer):
            return
        # Without set.acl they are created open, and refused below: missing, anyone could make them.
        created = await secure_paths.ensure_trusted(store)
        if created:
            log.info("created %d trusted ZooKeeper paths%s: %s", len(created), " with secure ACLs" if zk.set_acl else "",
                     ", ".join(created))
        problems = await secure_paths.exposures(store, secure_paths.owners(zk))
        if not problems:
            return
        message = secure_paths.refusal(problems, self.zookeeper, what=f"controller {self.controller_id}")
        if self.security.authorizer:
            log.error("refusing to start: %s", message)
            raise InsecureZooKeeperError(message)
        log.warning("%s (no authorizer is configured, so it starts)", message)

    async def run(self) -> None:
        """Run until cancelled."""
        for listener in self.listeners:
            try:
                await listener.start()
            except BaseException:
                for started in self.listeners:
                    await started.close()
                raise
            log.info("controller %d: listener %s (%s) on %s:%d", self.controller_id, listener.name, listener.protocol,
                     listener.host, listener.port)
        ctx = getattr(self.listener.handler, "ctx", None)
        # Clients are told each listener's advertised address, else its bound one (port 0 picks
        # one, known now); a wildcard was refused with the settings (controller.core.config).
        bound = [Listener(lis.name, lis.host, lis.port) for lis in self.listeners]
        self.advertised_by_name = advertised_addresses(bound, getattr(self.config, "advertised_listen", None))
        self.advertised = self.advertised_by_name[self.listener.name]
        if isinstance(ctx, AdminContext):
            ctx.host, ctx.port = self.advertised
        log.info("controller %d listening on %s:%d", self.controller_id, self.listener.host, self.listener.port)
        if self.ops is not None:
            try:
                await self.ops.start()
            except BaseException:
                for listener in self.listeners:
                    await listener.close()
                raise
            log.info("controller %d operations port on http://%s:%d (/healthz, /readyz, /metrics, /progress/history)",
                     self.controller_id, self.ops.host, self.ops.port)
        try:
            while True:
                try:
                    store = self._connect()
                    if inspect.isawaitable(store):
                        store = await store
                    store = RecordIds(MeteredStore(store, self.metrics), self.journal)
                    if self._audit is not None:
                        store = AuditedStore(store, self._audit, self.controller_id)
                except (ZkError, OSError) as e:  # unreachable, or the session went during the path checks
                    log.warning("cannot reach ZooKeeper at %s: %s; retrying", self.zookeeper, e)
                    await asyncio.sleep(CONNECT_RETRY_S)
                    continue
                try:
                    await self._session(store)
                except ZkError as e:
                    log.warning("ZooKeeper session ended: %r", e)
                finally:
                    self.role.active = None
                    self.role.store = None
                    await _close_quietly(store)
        finally:
            for listener in self.listeners:
                await listener.close()
            if self.ops is not None:
                await self.ops.close()

    async def readiness(self) -> tuple[bool, str]:
        """Ready: connected to ZooKeeper, and active (state loaded) or standing by with a
        known active controller."""
        store, inbox = self.role.store, self._inbox
        if store is None or inbox is None or not inbox.connected:
            return False, "not connected to ZooKeeper"
        active = self.role.active
        if active is not None:
            if active.state is None:
                return False, f"active (epoch {active.epoch}), still loading the cluster state"
            return True, f"active controller (epoch {active.epoch})"
        holder = await active_controller(store)
        if holder is None or holder == self.controller_id:
            return False, "standing by without a known active controller (election under way)"
        return True, f"standing by (active controller: {holder})"

    def apply_settings(self, new) -> None:
        """SIGHUP: take the live settings of ``new`` (caps, log level), log what changed and
        what would need a restart."""
        live, restart = reload_changes(self.config, new)
        for name in restart:
            log.warning("reload: %s changed to %r but needs a restart; keeping %r", name, getattr(new, name), getattr(self.config, name))
        if not live:
            log.info("reload: no live setting changed")
            return
        self.config = self.config.model_copy(update={name: after for name, (_, after) in live.items()})
        for name, (before, after) in live.items():
            log.info("reload: %s %r -> %r", name, before, after)
        if "log_level" in live:
            logging.getLogger().setLevel(self.config.log_level)
        # The engine reads the active controller's config at each step; the admin API its context's.
        if self.role.active is not None:
            self.role.active.config = self.config
        ctx = getattr(self.listener.handler, "ctx", None)
        if isinstance(ctx, AdminContext):
            ctx.config = self.config

    async def _session(self, store: Store) -> None:
        """One ZooKeeper session: register, campaign, act, repeat until the session is lost."""
        inbox = self._inbox = MeteredInbox(store, self.metrics)
        self.role.store = store
        try:
            for path in paths.PERSISTENT_PATHS:
                await store.ensure_path(path)
            await self._register(store, inbox)
            while not inbox.lost:
                won = await campaign(store, inbox, self.controller_id)
                if won is None:
                    return
                # Endpoints come from the active state's broker registry (/brokers/ids).
                transport = self._transport_factory(lambda b: _endpoint(self.role.active, b))
                active = ActiveController(
                    store,
                    inbox,
                    controller_id=self.controller_id,
                    epoch=won.epoch,
                    epoch_zkversion=won.epoch_zkversion,
                    transport=transport,
                    config=self.config,
                    throttle_removal=("all", "idle"),
                    on_step=self.metrics.observe_step,
                )
                self.journal.begin_term()
                active.journal = self.journal
                self.role.active = active
                self.metrics.elected(won.epoch)
                sampler = asyncio.create_task(
                    CopyProgress(self.metrics, getattr(self.config, "copy_progress_interval_s", 10.0),
                                 self.history).run(active, transport),
                    name="copy-progress",
                )
                reason = "shutdown"
                try:
                    reason = await active.run()
                except asyncio.CancelledError:
                    # A planned stop (SIGTERM): resign at once, after the last fenced write
                    # (ZooKeeper orders a session's requests), so a standby takes over now
                    # rather than when this session closes or times out.
                    try:
                        async with asyncio.timeout(RESIGN_TIMEOUT_S):
                            await release_if_ours(store)
                        log.info("controller %d resigned (epoch %d): shutting down", self.controller_id, won.epoch)
                    except (ZkError, TimeoutError) as e:
                        log.warning("could not delete /controller on the way out (%r): the session close will", e)
                    raise
                finally:
                    sampler.cancel()
                    await asyncio.gather(sampler, return_exceptions=True)
                    self.role.active = None
                    self.metrics.resigned(reason)
                    await transport.close()
                if reason == "session lost":
                    return
                await release_if_ours(store)
        finally:
            inbox.close()

    async def _register(self, store: Store, inbox: Inbox) -> None:
        """The ephemeral /reassignd/controllers/<id> naming this instance's listener."""
        # Every listener by name (Metadata answers a client at the listener it came on).
        endpoints = dict(self.advertised_by_name)
        payload = encode_listener(*self.advertised, endpoints=endpoints,
                                  protocols={name: self.security.protocol_or_plaintext(name) for name in endpoints})
        path = controller_path(self.controller_id)
        if await store.exists(paths.broker(self.controller_id)) is not None:
            # Node ids share one space (controller.shell.admin.metadata step 1), as Kafka's
            # must be unique: Metadata would list this instance in the broker's place.
            log.warning("controller id %d is also a registered broker's: clients will reach this controller, not "
                        "broker %d, under that id; give the controller an id no broker has", self.controller_id,
                        self.controller_id)
        while True:
            try:
                await store.create(path, payload, ephemeral=True, makepath=True)
                return
            except NodeExistsError:
                stat = await store.exists(path)
                if stat is not None and stat.ephemeral_owner == store.session_id:
                    return
                log.warning(
                    "%s exists (an earlier session of controller %d, or a duplicate id): waiting for it to go",
                    path,
                    self.controller_id,
                )
                await asyncio.sleep(CONNECT_RETRY_S)
            except NoNodeError:
                continue


def _endpoint(active: ActiveController | None, broker_id: int) -> tuple[str, int] | None:
    state = active.state if active is not None else None
    return None if state is None else broker_address(state.brokers, broker_id)


async def _close_quietly(store: Store) -> None:
    try:
        async with asyncio.timeout(5.0):
            await store.close()
    except Exception as e:  # closing a dead session must not stop the daemon
        log.info("closing the ZooKeeper session: %r", e)


# ---- command line ----------------------------------------------------------------------------


class UsageError(Exception):
    pass


def parse_listen(text: str) -> tuple[str, int]:
    try:
        return parse_hostport(text)
    except ValueError as e:
        raise UsageError(f"--listen {e}") from None


async def _serve(daemon: ControllerDaemon, shutdown_timeout: float, reread=None) -> int:
    """Run ``daemon`` until SIGTERM or SIGINT; on SIGHUP, ``reread()`` (new settings, or
    ConfigError) and apply what can change live."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)

    def reload() -> None:
        try:
            new = reread()
        except ConfigError as e:
            log.error("reload (SIGHUP) refused, nothing changed: %s", e)
            return
        daemon.apply_settings(new)

    if reread is not None:
        loop.add_signal_handler(signal.SIGHUP, reload)
    task = asyncio.create_task(daemon.run(), name="controller")
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    if task in done:
        stopper.cancel()
        exc = task.exception()
        if exc is not None:
            log.error("controller stopped: %r", exc)
            return 1
        return 0
    log.info("signal received: shutting down")
    task.cancel()
    try:
        async with asyncio.timeout(shutdown_timeout):
            await asyncio.gather(task, return_exceptions=True)
    except TimeoutError:
        log.warning("shutdown took longer than %.1fs: exiting anyway", shutdown_timeout)
    return 0


def main(argv: list[str]) -> int:
    try:
        args = parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    try:
        resolved = load_settings(args, os.environ)
    except ConfigError as e:
        # Before anything else happens (no ZooKeeper session, no socket): exit 2.
        print(f"reassignd controller: {e}", file=sys.stderr)
        return 2
    if args.print_config:
        sys.stdout.write(render_toml(resolved))
        return 0
    try:
        security = SecurityConfig.from_file(resolved.settings.security_config)
    except (ValueError, OSError) as e:  # the security config: bad file, bad keys
        print(f"reassignd controller: security: {e}", file=sys.stderr)
        return 2

    def settle(resolved: Resolved) -> Settings:  # the file may name the brokers' listener (Kafka's keys)
        return broker_listener_named(resolved, security.inter_broker_listener)

    try:
        settings = settle(resolved)
    except ConfigError as e:
        print(f"reassignd controller: {e}", file=sys.stderr)
        return 2
    try:
        daemon = ControllerDaemon(settings.zookeeper, settings.id, settings.listeners, settings, security=security)
    except (ValueError, OSError) as e:  # the security config: unreadable PEM, bad TLS or SASL settings
        print(f"reassignd controller: security: {e}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_format, role=daemon.role)
    for var in unknown_env(os.environ):
        log.warning("environment variable %s names no setting of reassignd controller: ignored", var)
    if settings.audit_log:
        try:
            open_audit_file(settings.audit_log, daemon.role)
        except OSError as e:
            print(f"reassignd controller: audit_log: cannot open {settings.audit_log}: {e.strerror or e}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(_serve(daemon, settings.shutdown_timeout_s, lambda: settle(load_settings(args, os.environ))))
    except OSError as e:
        print(f"reassignd controller: {e}", file=sys.stderr)
        return 1
