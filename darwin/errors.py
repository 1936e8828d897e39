"""Darwin's exceptions: one root, with input errors also being ``ValueError``/``TypeError``.

Callers can catch ``DarwinError`` for anything Darwin raises, or the built-in
base they would expect for bad input.
"""

from __future__ import annotations

RESET_HINT = ("run `darwin reset <checkpoint_dir>` to discard the job's checkpoints, state and committed output "
              "and start over")  # the way out of a job that cannot resume, named wherever that is the advice


class DarwinError(Exception):
    """Root of every error Darwin raises on purpose."""


class PlanError(DarwinError, ValueError):
    """A query is malformed: unknown column, bad window, unsupported operation."""


class SqlError(PlanError):
    """A SQL statement cannot be parsed or planned; the message names its line and column."""


class SchemaError(PlanError):
    """Data does not match the schema a query was built for."""


class DarwinTypeError(DarwinError, TypeError):
    """An expression combines types that do not go together."""


class ConfigError(DarwinError, ValueError):
    """A configuration value or file is invalid."""


class SourceError(DarwinError, ValueError):
    """A source cannot be read: missing or malformed file, wrong column type."""


class CastError(DarwinError, ValueError):
    """A value does not convert to the type a CAST asks for (text that does not parse as the type);
    TRY_CAST gives NULL instead."""


class UnsupportedError(DarwinError, NotImplementedError):
    """The chosen engine cannot execute this plan node or expression."""


class SinkError(DarwinError, ValueError):
    """Output cannot be written where a sink was told to write it."""


class CheckpointError(DarwinError):
    """A checkpoint cannot be used: written by another query or backend, or no longer consistent."""


class StateError(DarwinError):
    """Operator state is damaged or unusable while the job runs (a restart resumes from a checkpoint)."""
