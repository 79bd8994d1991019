"""kazoo's ``handler.select`` on ``select.poll``: the same answers, without a kernel object per call.

kazoo's connection thread calls ``handler.select`` before every socket read and write and at
every turn of its loop: several times per ZooKeeper request. Its threading handler answers
with ``kazoo.handlers.utils.selector_select``, which opens an epoll instance (a file
descriptor: epoll_create, an epoll_ctl per socket, close) for each call, so that no file
descriptor number is too large for it, as ``select.select``'s 1,024 would be. A ``poll`` object
has no file descriptor of its own and takes any descriptor number: creating one per call costs
a small allocation. In bench/controller.py at 30,000 partitions, the epoll instances were about
3% of the controller process's CPU (kazoo's thread takes the GIL like any other).

    handler = PollSelectHandler()            # a kazoo SequentialThreadingHandler
    readable, writable, _ = handler.select([sock], [], [], 0.5)

The answers are selector_select's: an object in both lists that is ready for both comes back
readable only; a hang-up or error counts as ready (for reading, and for writing), so the next
recv or send meets it (for an object waited on for one of them only, that one); a descriptor that is not open raises ValueError, as registering it with
epoll does there; a timeout must be a non-negative number or None (wait for ever).
"""

from __future__ import annotations

import math
import select

from kazoo.handlers.utils import fileobj_to_fd

_IN, _OUT = select.POLLIN, select.POLLOUT
_NVAL = select.POLLNVAL


def poll_select(rlist, wlist, xlist, timeout=None):
    """``(readable, writable, [])`` among ``rlist`` and ``wlist``, as kazoo's selector_select."""
    if timeout is not None:
        if not isinstance(timeout, (int, float)):
            raise TypeError("timeout must be a number")
        if timeout < 0:
            raise ValueError("timeout must be non-negative")
    masks: dict[int, int] = {}
    objects: dict[int, list] = {}
    for mask, fileobjs in ((_IN, rlist), (_OUT, wlist)):
        for fileobj in fileobjs:
            fd = fileobj_to_fd(fileobj)
            masks[fd] = masks.get(fd, 0) | mask
            objects.setdefault(fd, []).append(fileobj)
    poller = select.poll()
    for fd, mask in masks.items():
        poller.register(fd, mask)
    # As selectors.PollSelector: milliseconds rounded up, so a short wait is not a busy loop.
    ready = poller.poll(None if timeout is None else math.ceil(timeout * 1e3))
    readable: list = []
    writable: list = []
    for fd, events in ready:
        if events & _NVAL:
            raise ValueError("Invalid event mask or fd")
        # As selectors: anything but "writable" (data, hang-up, error) reads as readable,
        # anything but "readable" as writable, each only where it was asked; readable wins,
        # as in selector_select.
        mask = masks[fd]
        if mask & _IN and events & ~_OUT:
            readable.extend(objects[fd])
        elif mask & _OUT and events & ~_IN:
            writable.extend(objects[fd])
    return readable, writable, []
