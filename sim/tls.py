"""TLS on the simulated brokers' listeners: Kafka's SSL listener, from its ``ssl.*`` settings
with PEM files (``ssl.keystore.type=PEM``).

    tls = SimTls(keystore="server.pem", truststore="ca.pem", client_auth="required")
    ctx = server_context(tls)          # TlsSettingError (a ValueError) naming the bad setting
    await asyncio.start_server(serve, host, port, ssl=ctx)
    ctx = client_context(tls)          # the brokers' side of their connections to the controller

TLS 1.2 is the minimum (Kafka's ``ssl.enabled.protocols`` default is TLSv1.2,TLSv1.3).
``client_auth`` is Kafka's ``ssl.client.auth``: ``required`` (a client without a certificate
the truststore trusts is refused), ``requested`` (one is asked for and checked if sent),
``none``. The files are checked here, before anything listens, so that a bad one is named
(OpenSSL's own error for every kind of bad PEM is "PEM lib"). Written for the simulator on its
own: sim never imports the controller (whose admin listener has its own TLS settings).

The same settings are the brokers' client side when they reach a controller listener that
speaks SSL (:mod:`sim.controller_link`), as one set of ``ssl.*`` settings serves a Kafka
broker's inter-broker listener both ways: the controller's certificate is checked against the
truststore (none: the system's CAs, as Kafka falls back to the JVM's) and its host name (Kafka's
``ssl.endpoint.identification.algorithm=https`` default), and the keystore is the client
certificate (a controller listener with ``ssl.client.auth`` asks for one).
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from pathlib import Path

SECURITY_PROTOCOL = "SSL"  # what the registration's listener_security_protocol_map says of it
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
_CERTIFICATE = "-----BEGIN CERTIFICATE-----"
_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")
# PKCS#8 encrypted keys, and the legacy (traditional OpenSSL) form's header.
_ENCRYPTED = re.compile(r"-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED")


class TlsSettingError(ValueError):
    """One TLS setting is unusable: ``setting`` is the SimTls field, ``reason`` why."""

    def __init__(self, setting: str, reason: str):
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SimTls:
    keystore: str  # PEM: the certificate chain and its key in one file (Kafka's PEM keystore)
    key_password: str | None = None  # the key's, if it is encrypted (ssl.key.password)
    truststore: str | None = None  # PEM CA bundle client certificates are checked against
    client_auth: str = "none"  # none | requested | required (ssl.client.auth)

    def __post_init__(self):
        if self.client_auth not in CLIENT_AUTH:
            raise TlsSettingError("client_auth", f"must be one of {sorted(CLIENT_AUTH)}, not {self.client_auth!r}")


def server_context(tls: SimTls) -> ssl.SSLContext:
    """The listener's context; TlsSettingError naming the setting when a file is missing, is
    not PEM, or its key does not open with ``key_password``."""
    if tls.client_auth != "none" and not tls.truststore:
        raise TlsSettingError("truststore", f"client_auth {tls.client_auth!r} needs a truststore to check "
                                            "client certificates against")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    _load_keystore(ctx, tls)
    ctx.verify_mode = CLIENT_AUTH[tls.client_auth]
    if tls.truststore:
        _load_truststore(ctx, tls)
    return ctx


def client_context(tls: SimTls) -> ssl.SSLContext:
    """The brokers' context for connections to a controller's SSL listener: the peer's
    certificate and host name checked (against the truststore, else the system's CAs), the
    keystore presented as client certificate; TlsSettingError as for :func:`server_context`."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # CERT_REQUIRED and check_hostname
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if tls.truststore:
        _load_truststore(ctx, tls)  # it alone, as Kafka's ssl.truststore.location replaces the JVM's CAs
    else:
        ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    if tls.keystore:
        _load_keystore(ctx, tls)
    return ctx


def _load_keystore(ctx: ssl.SSLContext, tls: SimTls) -> None:
    """``tls.keystore`` as ``ctx``'s certificate, its file checked first (see the module's
    docstring)."""
    pem = _read(tls.keystore, "keystore")
    if _CERTIFICATE not in pem or not _PRIVATE_KEY.search(pem):
        raise TlsSettingError("keystore", f"{tls.keystore} is not a PEM keystore (a certificate chain and its "
                                          "private key in one file)")
    encrypted = bool(_ENCRYPTED.search(pem))
    if encrypted and tls.key_password is None:
        raise TlsSettingError("key_password", f"the key in {tls.keystore} is encrypted and no key password is given")
    try:
        # A callable, never None: with None OpenSSL would prompt on the terminal for a password.
        ctx.load_cert_chain(tls.keystore, password=tls.key_password if encrypted else _no_password)
    except ssl.SSLError as exc:
        if encrypted and exc.reason is None:  # OpenSSL's bare "PEM lib": the key did not decrypt
            raise TlsSettingError("key_password", f"does not open the key in {tls.keystore}") from None
        raise TlsSettingError("keystore", f"{tls.keystore}: {exc}") from None


def _load_truststore(ctx: ssl.SSLContext, tls: SimTls) -> None:
    _read(tls.truststore, "truststore")
    try:
        ctx.load_verify_locations(cafile=tls.truststore)
    except ssl.SSLError:
        raise TlsSettingError("truststore", f"{tls.truststore} holds no PEM certificate") from None


def _read(path: str, setting: str) -> str:
    try:
        return Path(path).read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise TlsSettingError(setting, f"cannot read {path}: {exc.strerror or exc}") from None


def _no_password() -> bytes:
    raise TlsSettingError("key_password", "the key is encrypted and no key password is given")
