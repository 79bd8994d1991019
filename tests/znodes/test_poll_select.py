"""znodes.poll_select answers as kazoo's selector_select does (the store's kazoo handler uses it),
on real sockets: readable, writable, both asked, hang-ups, timeouts, bad arguments."""

from __future__ import annotations

import os
import socket
import time

import pytest
from kazoo.handlers.utils import selector_select

from znodes.poll_select import poll_select
from znodes.store import _OrderedHandler


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def both(*args, **kwargs):
    ours, theirs = poll_select(*args, **kwargs), selector_select(*args, **kwargs)
    assert ours == theirs
    return ours


def test_idle_socket_is_writable_not_readable(pair):
    a, _ = pair
    assert both([a], [], [], 0) == ([], [], [])
    assert both([], [a], [], 0) == ([], [a], [])


def test_readable_wins_when_both_are_asked(pair):
    a, b = pair
    b.send(b"x")
    time.sleep(0.01)
    assert both([a], [], [], 0) == ([a], [], [])
    # ready both ways: readable only, listed once per list it was in (selector_select's way)
    assert both([a], [a], [], 0) == ([a, a], [], [])


def test_a_closed_peer_reads_as_ready_where_asked(pair):
    a, b = pair
    b.close()
    assert both([a], [], [], 0) == ([a], [], [])
    assert both([], [a], [], 0) == ([], [a], [])  # waited on for writing only: writable


def test_file_descriptor_numbers_and_several_objects(pair):
    a, b = pair
    b.send(b"x")
    time.sleep(0.01)
    r, w, x = both([a.fileno(), b], [b], [], 0)
    assert r == [a.fileno()] and w == [b, b] and x == []


def test_a_timeout_waits_about_that_long(pair):
    a, _ = pair
    started = time.monotonic()
    assert poll_select([a], [], [], 0.05) == ([], [], [])
    assert time.monotonic() - started >= 0.045


def test_bad_arguments_raise_as_kazoo(pair):
    a, _ = pair
    for args, error in ((([a], [], [], -1), ValueError), (([a], [], [], "1"), TypeError), (([object()], [], [], 0), TypeError),
                        (([-1], [], [], 0), TypeError)):
        with pytest.raises(error):
            selector_select(*args)
        with pytest.raises(error):
            poll_select(*args)


@pytest.mark.parametrize("select_", [poll_select, selector_select])
def test_a_descriptor_not_open_raises_value_error(select_):
    # (each on a descriptor of its own: selector_select leaves its epoll instance open when
    # the register fails, and that instance may take the closed descriptor's number)
    r, w = os.pipe()
    os.close(r)
    os.close(w)
    with pytest.raises(ValueError):
        select_([r], [], [], 0)


def test_the_store_handler_selects_with_it(pair, monkeypatch):
    import selectors

    def no_selector():
        raise AssertionError("an epoll instance per select")

    monkeypatch.setattr(selectors, "DefaultSelector", no_selector)
    a, b = pair
    b.send(b"x")
    time.sleep(0.01)
    assert _OrderedHandler().select([a], [b], [], 0) == ([a], [b], [])
