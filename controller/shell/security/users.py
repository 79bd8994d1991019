"""``reassignd users``: SCRAM users in ZooKeeper (``/config/users/<user>``, Kafka's format).

    reassignd users add    --zookeeper ZK --user alice --password-file pw.txt [--mechanism SCRAM-SHA-512 ...]
    reassignd users remove --zookeeper ZK --user alice [--mechanism SCRAM-SHA-256]
    reassignd users list   --zookeeper ZK

``add`` stores a credential for each ``--mechanism`` (default: both SCRAM-SHA-256 and -512, so
PLAIN, which checks the password against either, works too); the password comes from
``--password-file`` (first line) or ``$REASSIGND_USER_PASSWORD``, never from the command line
where ``ps`` would show it. ``--zk-config FILE`` gives the ZooKeeper credentials
(znodes.security). Exit status: 0 done, 1 ZooKeeper failed, 2 bad arguments or a refusal.

Credentials are stored secure by default, as Kafka's tool does (its ZooKeeper client uses the
secure ACL whenever the session is authenticated): with an identity in ``--zk-config``, every
znode written gets Kafka's secure ACL (the service's identity may do everything, nobody else
may even read ``/config/users``), ``zookeeper.set.acl`` or not. ``add`` refuses to write a
credential anyone else could read or change: with no identity (the znode would be
world-writable), or when ``/config``, ``/config/users`` or the user's znode already grants
another identity more than Kafka's secure ACL does (fix those with ``reassignd zk
secure-acls``); ``--force`` writes anyway, saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from dataclasses import replace

from controller.shell.security.scram import (
    DEFAULT_ITERATIONS,
    MAX_ITERATIONS,
    MECHANISMS,
    MIN_ITERATIONS,
    format_credential,
    make_credential,
)
from znodes import paths
from znodes import users as zusers
from znodes.api import ZkError

PASSWORD_ENV = "REASSIGND_USER_PASSWORD"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reassignd users", description="SCRAM users stored in ZooKeeper")
    sub = parser.add_subparsers(dest="action", required=True)
    for name in ("add", "remove", "list"):
        p = sub.add_parser(name)
        p.add_argument("--zookeeper", required=True, help="ZooKeeper connect string HOST:PORT[/chroot]")
        p.add_argument("--zk-config", metavar="FILE", help="ZooKeeper security properties (SASL digest, TLS)")
        if name != "list":
            p.add_argument("--user", required=True)
            p.add_argument("--mechanism", action="append", choices=sorted(MECHANISMS))
        if name == "add":
            p.add_argument("--force", action="store_true",
                           help="write the credential even where others could read or change it")
            p.add_argument("--password-file", metavar="FILE", help=f"password on the first line (else ${PASSWORD_ENV})")
            p.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS,
                           help=f"PBKDF2 rounds, {MIN_ITERATIONS}-{MAX_ITERATIONS}")
    return parser


def _password(args) -> str:
    if args.password_file:
        with open(args.password_file, encoding="utf-8") as f:
            password = f.readline().rstrip("\r\n")
    else:
        password = os.environ.get(PASSWORD_ENV, "")
    if not password:
        raise ValueError(f"no password: give --password-file or set ${PASSWORD_ENV}")
    return password


class Refused(Exception):
    """The credential would be exposed and --force was not given."""


async def _exposure(store, security, user: str) -> str | None:
    """Why a credential for ``user`` written through ``store`` could be read or changed by
    others, None when it could not."""
    from znodes import secure_paths

    if security.digest is None and security.sasl is None:
        return (f"the ZooKeeper session has no identity, so {zusers.user_path(user)} would be world-readable and "
                f"world-writable (anyone could read its salt and keys, or overwrite them and log in as {user}); "
                f"give --zk-config FILE with zookeeper.auth.digest or zookeeper.sasl.jaas.config")
    checked = [paths.CONFIG, zusers.CONFIG_USERS, zusers.user_path(user)]
    problems = []
    for path in checked:
        acl = await secure_paths.acl_of(store, path)
        if acl is not None:  # else created by this write, with the secure ACL
            problems += secure_paths.exposed(path, acl, secure_paths.owners(security))
    if not problems:
        return None
    return (f"others could read or change the credential: {', '.join(map(str, problems))}; run `reassignd zk "
            f"secure-acls --zookeeper ZK --zk-config FILE` with this identity first")


async def _run(args) -> int:
    from znodes.security import ZkSecurity

    security = ZkSecurity.from_file(args.zk_config)
    if (security.digest or security.sasl) and not security.set_acl:
        security = replace(security, set_acl=True)  # Kafka's tool: secure whenever authenticated
    store = await security.connect(args.zookeeper, create_chroot=True)
    try:
        if args.action == "add":
            password = _password(args)
            problem = await _exposure(store, security, args.user)
            if problem and not args.force:
                raise Refused(f"not written: {problem} (or --force)")
            if problem:
                print(f"reassignd users: --force: writing anyway, though {problem}", file=sys.stderr)
            mechanisms = args.mechanism or sorted(MECHANISMS)
            creds = {m: format_credential(make_credential(m, password, iterations=args.iterations)) for m in mechanisms}
            for parent in (paths.CONFIG, zusers.CONFIG_USERS):  # each with its own ACL, not the credential's
                await store.ensure_path(parent)
            await zusers.write_credentials(store, args.user, creds)
            print(f"user {args.user}: {', '.join(mechanisms)} set")
        elif args.action == "remove":
            removed = await zusers.delete_credentials(store, args.user, args.mechanism)
            if not removed:
                print(f"user {args.user} has no such credential", file=sys.stderr)
                return 1
            print(f"user {args.user}: {', '.join(removed)} removed")
        else:
            for user, mechanisms in (await zusers.list_users(store)).items():
                print(f"{user}\t{','.join(mechanisms)}")
        return 0
    finally:
        await store.close()


def main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:
        return 0 if e.code == 0 else 2
    if getattr(args, "user", None) is not None and not zusers.storable(args.user):
        print(f"reassignd users: --user {args.user!r}: not a name a credential can be stored under "
              "(empty, '.' and '..' cannot be znode names)", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(args))
    except (ValueError, OSError, Refused) as e:
        print(f"reassignd users: {e}", file=sys.stderr)
        return 2
    except ZkError as e:
        print(f"reassignd users: ZooKeeper: {e}", file=sys.stderr)
        return 1
