"""The table of admin APIs the listener serves, built from the modules listed here.

Each module defines ``APIS: list[controller.shell.admin.base.Api]``; add a module by adding its
name below. Two modules serving the same key is an error at start-up, not a silent override.

    table = build_table()          # {api_key: Api}
"""

from __future__ import annotations

import importlib

from controller.shell.admin.base import Api

MODULES: tuple[str, ...] = (
    "controller.shell.admin.metadata",
    "controller.shell.admin.configs",
    "controller.shell.admin.kip240",
    "controller.shell.admin.kip455_list",
    "controller.shell.admin.cancel",
    "controller.shell.admin.kip179",
    "controller.shell.admin.kip455_alter",
    "controller.shell.admin.acls",
    "controller.shell.admin.scram_users",
    "controller.shell.admin.client_quotas",
    "controller.shell.admin.create_topics",
    "controller.shell.admin.delete_topics",
    "controller.shell.admin.create_partitions",
    "controller.shell.admin.alter_configs",
    "controller.shell.admin.elect_leaders",
    "controller.shell.admin.controlled_shutdown",
    "controller.shell.admin.alter_partition",
    "controller.shell.admin.allocate_producer_ids",
    # What every node Metadata lists answers (docs/DESIGN.md section 5.5).
    "controller.shell.admin.describe_log_dirs",
    "controller.shell.admin.alter_replica_log_dirs",
    "controller.shell.admin.list_groups",
    "controller.shell.admin.describe_groups",
    "controller.shell.admin.list_transactions",
)


def build_table(modules: tuple[str, ...] = MODULES) -> dict[int, Api]:
    table: dict[int, Api] = {}
    for name in modules:
        for api in importlib.import_module(name).APIS:
            if api.key in table:
                raise RuntimeError(f"API key {api.key} served by both {table[api.key].name} and {api.name} ({name})")
            table[api.key] = api
    return table
