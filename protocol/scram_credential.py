"""A SCRAM credential as Kafka stores it, below everything that reads one: the controller's
logins and KIP-554 handlers, and the simulated brokers' DescribeUserScramCredentials.

Kafka keeps one credential per user and mechanism in ``/config/users/<user>`` as
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>`` (ScramCredentialUtils); the
same string is parsed and written here, so credentials made by ``kafka-configs.sh`` work and
the other way round::

    text = format_credential(cred)                     # Kafka's string
    parse_credential("SCRAM-SHA-512", text)            # a ScramCredential, or ScramError

The exchange and the key derivations are controller.shell.security.scram's. Pure.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

# RFC 7677 and Kafka's ScramMechanism: the mechanism names and their hashes.
MECHANISMS = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class ScramError(Exception):
    """A SCRAM message or credential that is malformed, out of order or wrong."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    mechanism: str
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def hash_name(mechanism: str) -> str:
    """The hashlib name of a SCRAM mechanism; ScramError for any other mechanism."""
    try:
        return MECHANISMS[mechanism]
    except KeyError:
        raise ScramError(f"unknown SCRAM mechanism {mechanism!r}") from None


def format_credential(cred: ScramCredential) -> str:
    b64 = lambda b: base64.b64encode(b).decode("ascii")  # noqa: E731
    return (
        f"salt={b64(cred.salt)},stored_key={b64(cred.stored_key)},"
        f"server_key={b64(cred.server_key)},iterations={cred.iterations}"
    )


def parse_credential(mechanism: str, text: str) -> ScramCredential:
    hash_name(mechanism)
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep:
            raise ScramError(f"credential field {part!r} is not key=value")
        fields[key] = value
    try:
        iterations = int(fields["iterations"])
        return ScramCredential(
            mechanism,
            base64.b64decode(fields["salt"], validate=True),
            base64.b64decode(fields["stored_key"], validate=True),
            base64.b64decode(fields["server_key"], validate=True),
            iterations,
        )
    except KeyError as e:
        raise ScramError(f"credential lacks {e.args[0]}") from None
    except ValueError as e:
        raise ScramError(f"credential is malformed: {e}") from None
