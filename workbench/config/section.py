"""What every config section shares: the base model (unknown keys are errors, field docstrings
are the documentation) and the named value types the sections use."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)

Runtime = Literal["local", "docker", "remote"]
Isolation = Literal["auto", "none", "bwrap"]
ConfirmationPolicy = Literal["always", "risky", "never"]
RiskThreshold = Literal["LOW", "MEDIUM", "HIGH"]
HeadlessOnConfirm = Literal["approve", "reject", "stop"]
NetworkMode = Literal["off", "allowlist", "on"]


class Section(BaseModel):
    """Base of every config section: unknown keys are errors, field docstrings are docs."""

    model_config = ConfigDict(
        extra="forbid",
        use_attribute_docstrings=True,
        validate_assignment=True,
        allow_inf_nan=False,  # no setting means anything by NaN or infinity
    )
