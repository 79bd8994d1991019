"""``reassignd controller``'s command line, and its settings read from flags, environment and file.

Every setting of controller.core.config.Settings is a flag (``max_incoming_per_broker`` is
``--max-incoming-per-broker``), a ``REASSIGND_MAX_INCOMING_PER_BROKER`` variable and a key of
the ``--config`` TOML file; controller.core.config merges and checks them.

    args = parse_args(["--config", "c.toml", "--id", "101"])     # SystemExit on bad syntax
    resolved = load_settings(args, os.environ)                    # ConfigError names what is bad
    resolved.settings.id, resolved.origins["id"]                  # 101, "flag --id"

The file is read here (and again on SIGHUP, from the same path, with the same environment and
flags on top).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from controller.core.config import (ENV_PREFIX, FIELDS, ConfigError, Resolved, Settings, describe, env_name, flag_name,
                                    parse_toml, resolve)

# REASSIGND_* variables that other commands read (the demo, the planner): not settings of
# this one, so not worth a warning.
OTHER_COMMANDS_VARS = frozenset({"REASSIGND_DEMO_TEST_RUN", "REASSIGND_SPARK_DRIVER_MEMORY"})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reassignd controller",
        description="Run a reassignment controller instance. Every setting below is also a REASSIGND_<NAME> "
        "environment variable and a key of the --config TOML file (flags > environment > file > defaults).",
    )
    parser.add_argument("--config", metavar="FILE.toml", help="TOML file of settings (top-level name = value keys)")
    parser.add_argument(
        "--print-config", action="store_true", help="print the effective settings and where each came from, then exit"
    )
    for name in FIELDS:
        # --listen may be given again, one listener each (joined as Kafka's comma-separated list).
        action = "append" if name == "listen" else "store"
        parser.add_argument(flag_name(name), dest=name, metavar=name.upper(), action=action,
                            help=f"{describe(name)} [{env_name(name)}]")
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if args.listen is not None:
        args.listen = ",".join(args.listen)
    return args


def read_config_file(path: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read config file {path}: {e.strerror or e}") from None
    return parse_toml(data, path)


def load_settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Resolved:
    file = read_config_file(args.config) if args.config else None
    return resolve(
        file=file,
        file_name=args.config or "",
        env=environ,
        flags={name: getattr(args, name) for name in FIELDS},
    )


def broker_listener_named(resolved: Resolved, named: str | None) -> Settings:
    """The settings with ``broker_listener`` as the security file names it (``named``: its
    ``inter.broker.listener.name`` or ``security.inter.broker.protocol``, Kafka's keys), when the
    setting was left at its default; a setting given that names another listener is a
    ConfigError naming both, as a broker refuses two different inter-broker listeners."""
    settings = resolved.settings
    if named is None:
        return settings
    if resolved.origins.get("broker_listener", "default") == "default":
        return settings.model_copy(update={"broker_listener": named})
    if settings.broker_listener.upper() != named:
        raise ConfigError(f"broker_listener ({resolved.origins['broker_listener']}) is {settings.broker_listener!r} but "
                          f"the security config names the brokers' listener {named!r} (inter.broker.listener.name or "
                          "security.inter.broker.protocol): give one, or the same in both")
    return settings


def unknown_env(environ: Mapping[str, str]) -> list[str]:
    """REASSIGND_* variables that name no setting (a typo, most likely): warned about, since
    other tools share the prefix."""
    known = {env_name(n) for n in FIELDS} | OTHER_COMMANDS_VARS
    return sorted(k for k in environ if k.startswith(ENV_PREFIX) and k not in known)
