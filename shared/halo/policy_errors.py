"""What the policy client raises beyond ``halo.transport``'s errors, and the service name they carry.

``EngineDead`` says the server answers but its engine process died (restart it); ``SampleAborted``
that a request was dropped by a weight sync (sample again); ``WrongAdapter`` that the answer came
from another version than the one asked. All are importable from ``halo.policy_client`` too, where
callers of the client expect them.
"""

from __future__ import annotations

from halo.transport import ServiceFailed, ServiceUnavailable

SERVICE = "policy server"


class EngineDead(ServiceFailed):
    """The HTTP server answers but ``/health`` is 503: the engine process died; restart the server."""


class SampleAborted(ServiceUnavailable):
    """vLLM aborted the request: it queued while new weights were loaded (``publish_weights``) and
    named a version those weights replaced. Nothing was sampled; ask again with the current version."""


class WrongAdapter(ServiceFailed):
    """A server (or policy replica) answered from another version than the one asked for: an
    infrastructure failure, never a sample to train on (its tokens are not the asked policy's)."""
