"""The control channel of a running ``reassignd sim``: a line protocol on a loopback TCP port.

One command per line, one answer line per command: ``OK <json>`` or ``ERR <reason>``.

=====================  ==============================================================
``status``             brokers (running, port, rack, replicas with size/lag/role/leader
                       epoch), throttles
``stop N``             stop broker N as if its process died: its session ends, so
                       ``/brokers/ids/N`` goes; its listener closes; the others keep running
``controlled-stop N``  stop broker N as Kafka's controlled shutdown does: it first asks the
                       active controller to move its leaderships away (ControlledShutdown,
                       up to 3 tries while partitions remain: sim.controlled_shutdown), then
                       stops as ``stop N``. Answers ``{"stopped": N, "controlled": true|false,
                       "remaining": [[topic, partition], ...], "tries": K}``: controlled when
                       the last answer was NONE with nothing remaining
``start N``            start broker N again: new session and registration, logs kept
``restart N``          stop (if running), then start
``fail-dir N DIR``     log directory DIR of broker N fails (KIP-113): its replicas go offline,
                       DescribeLogDirs answers KAFKA_STORAGE_ERROR for it until N restarts
``shutdown``           deregister every broker and exit, as SIGTERM does
``help``               the commands
=====================  ==============================================================

Example (the port is printed in the ``ready`` line and given by ``--control-port``)::

    $ printf 'stop 2\\nstatus\\n' | nc 127.0.0.1 7070
    OK {"stopped": 2}
    OK {"cluster_id": "...", "brokers": {...}, "throttles": {...}}
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from sim.cluster import BrokerRegistrationError, SimulatedCluster
from znodes.api import ZkError

log = logging.getLogger(__name__)

# A command is a word and a broker id; anything longer is not a command.
MAX_LINE = 1024
HELP = "commands: status | stop N | controlled-stop N | start N | restart N | fail-dir N DIR | shutdown | help"


class ControlServer:
    def __init__(self, cluster: SimulatedCluster, on_shutdown: Callable[[], None]):
        self.cluster = cluster
        self.on_shutdown = on_shutdown
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port: int | None = None

    async def start(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_LINE, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    writer.write(b"ERR line too long\n")
                    break
                if not line:
                    break
                writer.write((await self.execute(line.decode("utf-8", "replace")) + "\n").encode())
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._writers.discard(writer)
            writer.close()

    async def execute(self, line: str) -> str:
        """The answer line (without newline) for one command line."""
        words = line.split()
        if not words:
            return "ERR empty command; " + HELP
        command, args = words[0].lower(), words[1:]
        try:
            if command == "help" and not args:
                return "OK " + json.dumps({"help": HELP})
            if command == "status" and not args:
                return "OK " + json.dumps(self.cluster.status())
            if command == "shutdown" and not args:
                self.on_shutdown()
                return "OK " + json.dumps({"shutdown": True})
            if command in ("stop", "start", "restart") and len(args) == 1:
                broker_id = _broker_id(args[0])
                action = {
                    "stop": self.cluster.stop_broker,
                    "start": self.cluster.start_broker,
                    "restart": self.cluster.restart_broker,
                }[command]
                await action(broker_id)
                return "OK " + json.dumps({f"{command}ed" if command != "stop" else "stopped": broker_id})
            if command == "controlled-stop" and len(args) == 1:
                broker_id = _broker_id(args[0])
                outcome = await self.cluster.controlled_stop_broker(broker_id)
                return "OK " + json.dumps({"stopped": broker_id, "controlled": outcome.controlled,
                                           "remaining": [list(tp) for tp in outcome.remaining],
                                           "tries": outcome.tries})
            if command == "fail-dir" and len(args) == 2:
                broker_id = _broker_id(args[0])
                lost = await self.cluster.fail_log_dir(broker_id, args[1])
                return "OK " + json.dumps({"failed_dir": args[1], "broker": broker_id,
                                           "offline": [{"topic": t, "partition": p} for t, p in lost],
                                           "halted": not self.cluster.brokers[broker_id].running})
        except (ValueError, BrokerRegistrationError, ZkError, OSError) as exc:
            return f"ERR {exc}"
        return f"ERR unknown command {line.strip()[:80]!r}; " + HELP


def _broker_id(word: str) -> int:
    if not word.isascii() or not word.isdigit():
        raise ValueError(f"broker id must be a non-negative integer, got {word!r}")
    return int(word)
