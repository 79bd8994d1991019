"""One request body encoded once for many brokers, and frames built around encoded bodies.

An UpdateMetadata request goes to every live broker with the same partition states; only the
``broker_epoch`` (the epoch of the broker it is addressed to) differs. Encoding it once and
writing each broker's epoch into its fixed place makes the bytes ``protocol.encode_body`` would
make for that broker, at the cost of one encode instead of one per broker (a step completing
8,000 partitions on 12 brokers encoded 96,000 partition entries for 8,000 distinct ones).

Steps:
 1. At import, find where the int64 ``broker_epoch`` sits in an encoded UpdateMetadata body of
    the version the controller sends: encode one body with two different epochs and compare
    (the spec puts it after controller_id and controller_epoch, at bytes 8..16). If the two
    encodings differ anywhere else, or not in one 8-byte window, nothing is shared: each
    broker's body is encoded on its own, as before.
 2. :func:`per_broker_bodies` encodes the first broker's body and, for every other broker,
    copies it with that broker's epoch written in the window.
 3. :func:`request_frame` is ``protocol.encode_request`` for a body already encoded
    (``protocol.request_frame``: the size prefix, the request header, the body bytes).

    bodies = per_broker_bodies(UPDATE_METADATA, 6, common_body, {1: 17, 2: 23})  # broker -> epoch
    frame = request_frame(6, 6, correlation_id=9, client_id="reassignd-controller", encoded=bodies[1])
"""

from __future__ import annotations

import struct

import protocol

_INT64 = struct.Struct(">q")
# Two distinct epochs whose 8-byte encodings differ in every byte, so the window is exact.
_PROBE_EPOCHS = (0x0102030405060708, -0x0102030405060709)


def _epoch_window(api_key: int, api_version: int) -> tuple[int, int] | None:
    """(start, end) of broker_epoch in an encoded body, or None if it cannot be located."""
    probe = {"controller_id": 1, "controller_epoch": 1, "topic_states": [], "live_brokers": []}
    try:
        a = protocol.encode_body(api_key, api_version, "request", probe | {"broker_epoch": _PROBE_EPOCHS[0]})
        b = protocol.encode_body(api_key, api_version, "request", probe | {"broker_epoch": _PROBE_EPOCHS[1]})
    except (ValueError, KeyError):
        return None
    if len(a) != len(b):
        return None
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    if not diff or diff[-1] - diff[0] != _INT64.size - 1:
        return None
    start = diff[0]
    if a[start : start + 8] != _INT64.pack(_PROBE_EPOCHS[0]) or b[start : start + 8] != _INT64.pack(_PROBE_EPOCHS[1]):
        return None
    return start, start + _INT64.size


_WINDOWS: dict[tuple[int, int], tuple[int, int] | None] = {}


def per_broker_bodies(api_key: int, api_version: int, body: dict, epochs: dict[int, int]) -> dict[int, bytes] | None:
    """broker id -> encoded ``body`` with ``broker_epoch`` = that broker's epoch; None when
    this request's bodies cannot be shared (the caller encodes each one on its own)."""
    key = (api_key, api_version)
    if key not in _WINDOWS:
        _WINDOWS[key] = _epoch_window(api_key, api_version)
    window = _WINDOWS[key]
    if window is None or not epochs:
        return None
    start, end = window
    ids = list(epochs)
    try:
        first = protocol.encode_body(api_key, api_version, "request", body | {"broker_epoch": epochs[ids[0]]})
        head, tail = first[:start], first[end:]
        out = {ids[0]: first}
        for broker_id in ids[1:]:
            out[broker_id] = head + _INT64.pack(epochs[broker_id]) + tail
    except (ValueError, struct.error, OverflowError, TypeError):
        # A body the codec refuses: encoded per broker at send time, where the dispatcher
        # reports it (a step never fails on an encoding).
        return None
    return out


def request_frame(api_key: int, api_version: int, correlation_id: int, client_id: str | None, encoded: bytes) -> bytes:
    """A size-prefixed request frame around an already encoded body (protocol's header writer)."""
    return protocol.request_frame(api_key, api_version, correlation_id, client_id, encoded)
