"""Everything this project knows about ZooKeeper: layout, payload models, stores, launcher.

See :mod:`znodes.api` for the store contract shared by the real store and the twin.
"""
