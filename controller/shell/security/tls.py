"""TLS for the admin listener, from Kafka's ``ssl.*`` settings with PEM files.

    ctx = server_context(TlsSettings(keystore="server.pem", key="server.key",
                                     truststore="ca.pem", client_auth="required"))
    await asyncio.start_server(serve, host, port, ssl=ctx)

TLS 1.2 is the minimum (Kafka's ``ssl.enabled.protocols`` default is TLSv1.2,TLSv1.3).
``ssl.client.auth``: ``required`` (a client without a certificate the truststore trusts fails
the handshake), ``requested`` (a certificate is asked for and checked if sent), ``none``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


@dataclass(frozen=True)
class TlsSettings:
    keystore: str  # PEM: the server certificate (chain), and its key unless ``key`` is given
    key: str | None = None
    key_password: str | None = None
    truststore: str | None = None  # PEM CA bundle for client certificates
    client_auth: str = "none"


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    if settings.client_auth not in CLIENT_AUTH:
        raise ValueError(f"ssl.client.auth must be one of {sorted(CLIENT_AUTH)}, not {settings.client_auth!r}")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(settings.keystore, settings.key, settings.key_password)
    ctx.verify_mode = CLIENT_AUTH[settings.client_auth]
    if settings.client_auth != "none":
        if not settings.truststore:
            raise ValueError("ssl.client.auth requested/required needs ssl.truststore.location")
        ctx.load_verify_locations(settings.truststore)
    return ctx
