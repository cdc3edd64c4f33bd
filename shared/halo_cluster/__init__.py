"""The cluster layer: Ray Core places, supervises and counts rollout nodes; the Redis Streams job
path and the services' HTTP APIs stay the data path (docs/cluster.md).

Imports ``halo`` and itself only; Ray is imported by the modules that talk to it
(``rollout_node``, ``supervisor``), never by ``halo`` or the services.
"""
