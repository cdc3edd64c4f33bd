"""HALO-Agent shared package: the typed protocol every service speaks, and the helpers they share.

Services import from here and from nowhere else in each other's code: schemas (REST and Redis
messages), the computer-use action protocol, Redis Streams queues, settings, prompts and the
policy client.
"""

__version__ = "0.1.0"
