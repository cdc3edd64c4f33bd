"""One typed schema package for everything that crosses REST or Redis.

Every message subclasses ``Message`` (``schema_version``, unknown fields rejected). Services share
these types and nothing else.
"""

from halo.schemas.actions import (
    Action,
    ActionParseError,
    ActionType,
    ParseErrorReason,
)
from halo.schemas.base import SCHEMA_VERSION, Message, new_id
from halo.schemas.env import (
    CreateSessionRequest,
    ErrorKind,
    ErrorResponse,
    ForkMethod,
    ForkRequest,
    ForkResponse,
    Observation,
    ResetResponse,
    ScreenshotRef,
    SessionInfo,
    Snapshot,
    StepRequest,
    StepResponse,
    ValidationResult,
    Viewport,
)
from halo.schemas.reward import RewardBreakdown, RewardRequest, StateSummary
from halo.schemas.rollout import (
    BranchPolicy,
    EpisodeSummary,
    GroupMode,
    PolicyVersion,
    PromptRecord,
    RolloutJob,
    RolloutResult,
    SamplingParams,
    SearchOutcome,
    StructuredMode,
    Transition,
)
from halo.schemas.runs import Algorithm, LossType, RunEvent, RunSpec, RunState, RunStatus, TrackerName
from halo.schemas.search import SearchTree, TreeNode
from halo.schemas.tasks import Task, Website

__all__ = [
    "SCHEMA_VERSION",
    "Action",
    "ActionParseError",
    "ActionType",
    "Algorithm",
    "BranchPolicy",
    "CreateSessionRequest",
    "EpisodeSummary",
    "ErrorKind",
    "ErrorResponse",
    "ForkMethod",
    "ForkRequest",
    "ForkResponse",
    "GroupMode",
    "LossType",
    "Message",
    "Observation",
    "ParseErrorReason",
    "PolicyVersion",
    "PromptRecord",
    "ResetResponse",
    "RewardBreakdown",
    "RewardRequest",
    "RolloutJob",
    "RolloutResult",
    "SearchOutcome",
    "RunEvent",
    "RunSpec",
    "RunState",
    "RunStatus",
    "TrackerName",
    "ScreenshotRef",
    "SessionInfo",
    "Snapshot",
    "StateSummary",
    "StepRequest",
    "StepResponse",
    "Task",
    "SamplingParams",
    "SearchTree",
    "StructuredMode",
    "Transition",
    "TreeNode",
    "ValidationResult",
    "Viewport",
    "Website",
    "new_id",
]
