"""Errors shared by the configuration utilities, plus small validation helpers.

Exception hierarchy (every class derives from :class:`FigarohError`, also
exported under its upstream name :data:`FigarohExampleError`):

* :class:`ConfigurationError` (``ValueError``) — a configuration file or
  mapping is missing, malformed or inconsistent;
* :class:`ValidationError` (``ValueError``) — an input value failed a check;
* :class:`DataProcessingError` (``RuntimeError``) — processing of valid-looking
  data failed;
* :class:`RobotInitializationError` (``RuntimeError``);
* :class:`CalibrationError` / :class:`IdentificationError` (``RuntimeError``).

Validators (``validate_*``) raise :class:`ValidationError`; the decorators wrap
the exceptions of the decorated function into the matching error class while
chaining the original exception (``raise ... from exc``).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from figaroh.errors import FigarohError

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

#: Command line that converts a legacy flat configuration file to the unified
#: format. Quoted verbatim by every "legacy format" error and warning.
MIGRATION_COMMAND = (
    "python -m figaroh.utils.config_migration --input <legacy.yaml> --output <unified.yaml>"
)


#: Upstream name of the base class (``figaroh.utils.error_handling.FigarohExampleError``).
FigarohExampleError = FigarohError


class ConfigurationError(FigarohError, ValueError):
    """A configuration file or mapping is missing, malformed or inconsistent.

    Subclasses ``ValueError`` so that ``except ValueError`` keeps working.
    """


class ValidationError(FigarohError, ValueError):
    """An input value (array, range, mapping) failed a validation check."""


class DataProcessingError(FigarohError, RuntimeError):
    """Processing of input data failed for a reason other than bad values."""


class RobotInitializationError(FigarohError, RuntimeError):
    """A robot model could not be built or initialised."""


class CalibrationError(FigarohError, RuntimeError):
    """A geometric calibration step failed."""


class IdentificationError(FigarohError, RuntimeError):
    """A dynamic identification step failed."""


# ---------------------------------------------------------------------------
# validators
# ---------------------------------------------------------------------------


def validate_robot_config(config: Any) -> None:
    """Check that ``config`` is a mapping holding a non-empty ``robot_name``.

    Args:
        config: Task configuration mapping.

    Raises:
        ValidationError: ``config`` is not a mapping or has no ``robot_name``.
    """
    if not isinstance(config, dict):
        raise ValidationError(f"robot configuration must be a mapping, got {type(config).__name__}")
    if not config.get("robot_name"):
        raise ValidationError(
            "robot configuration is missing 'robot_name' (set robot.name in the config file)"
        )


def _check_array(name: str, value: Any, ref_shape: tuple[int, ...] | None) -> np.ndarray:
    if not isinstance(value, np.ndarray):
        raise ValidationError(f"{name} must be a numpy.ndarray, got {type(value).__name__}")
    if ref_shape is None and value.ndim != 2:
        raise ValidationError(f"{name} must be 2-D (n_samples, n_joints), got shape {value.shape}")
    if ref_shape is not None and value.shape != ref_shape:
        raise ValidationError(f"{name} has shape {value.shape}, expected {ref_shape} (shape of q)")
    if not np.all(np.isfinite(value)):
        bad = int(np.count_nonzero(~np.isfinite(value)))
        raise ValidationError(f"{name} contains {bad} NaN/inf value(s)")
    return value


def validate_trajectory_data(
    q: np.ndarray,
    qd: np.ndarray | None = None,
    qdd: np.ndarray | None = None,
    tau: np.ndarray | None = None,
) -> None:
    """Validate trajectory arrays.

    Args:
        q: Joint positions [rad or m], 2-D ``(n_samples, n)``.
        qd: Joint velocities [rad/s or m/s], same shape as ``q``.
        qdd: Joint accelerations [rad/s² or m/s²], same shape as ``q``.
        tau: Joint efforts [N·m or N], same shape as ``q``.

    Raises:
        ValidationError: wrong type, dimension, shape or a non-finite entry.
    """
    _check_array("q", q, None)
    for name, value in (("qd", qd), ("qdd", qdd), ("tau", tau)):
        if value is not None:
            _check_array(name, value, q.shape)


def validate_numeric_range(
    value: Any,
    min_val: float | None = None,
    max_val: float | None = None,
    name: str = "value",
) -> None:
    """Check ``min_val <= value <= max_val`` for a finite real number.

    Args:
        value: Number to check (unit of the caller's quantity).
        min_val: Inclusive lower bound, or ``None``.
        max_val: Inclusive upper bound, or ``None``.
        name: Name used in the error message.

    Raises:
        ValidationError: not a finite real number, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValidationError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValidationError(f"{name} must be finite, got {value!r}")
    if min_val is not None and value < min_val:
        raise ValidationError(f"{name}={value!r} is below the minimum {min_val!r}")
    if max_val is not None and value > max_val:
        raise ValidationError(f"{name}={value!r} is above the maximum {max_val!r}")


# ---------------------------------------------------------------------------
# decorators
# ---------------------------------------------------------------------------


def validate_robot_initialization(func: F) -> F:
    """Wrap any exception of ``func`` into :class:`RobotInitializationError`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except RobotInitializationError:
            raise
        except Exception as exc:
            raise RobotInitializationError(f"Robot initialization failed: {exc}") from exc

    return wrapper  # type: ignore[return-value]


def validate_input_data(func: F) -> F:
    """Reject NaN/inf ndarray positional arguments; wrap other failures.

    Non-finite ndarray positional arguments raise :class:`ValidationError`
    before ``func`` runs; any other exception raised by ``func`` (except a
    :class:`ValidationError`) becomes a :class:`DataProcessingError`.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for i, arg in enumerate(args):
            if isinstance(arg, np.ndarray) and arg.dtype.kind in "fc":
                if not np.all(np.isfinite(arg)):
                    raise ValidationError(
                        f"{func.__name__}: positional argument {i} contains NaN/inf values"
                    )
        try:
            return func(*args, **kwargs)
        except ValidationError:
            raise
        except Exception as exc:
            raise DataProcessingError(f"{func.__name__} failed: {exc}") from exc

    return wrapper  # type: ignore[return-value]


def _make_handler(error_cls: type[FigarohError], label: str) -> Callable[[F], F]:
    def decorator(func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return func(*args, **kwargs)
            except error_cls:
                raise
            except (ValueError, np.linalg.LinAlgError) as exc:
                raise error_cls(f"{label} failed: {exc}") from exc
            except Exception as exc:
                logger.exception("Unexpected %s error in %s", label.lower(), func.__name__)
                raise error_cls(f"Unexpected {label.lower()} error: {exc}") from exc

        return wrapper  # type: ignore[return-value]

    return decorator


#: Wrap ``ValueError``/``LinAlgError`` into :class:`CalibrationError`.
handle_calibration_errors = _make_handler(CalibrationError, "Calibration")
#: Wrap ``ValueError``/``LinAlgError`` into :class:`IdentificationError`.
handle_identification_errors = _make_handler(IdentificationError, "Identification")


def safe_execute(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """Call ``func`` and return ``(True, result)`` or ``(False, exception)``."""
    try:
        return True, func(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the point of this helper
        logger.debug("safe_execute(%s) failed: %s", getattr(func, "__name__", func), exc)
        return False, exc


def setup_example_logging(log_level: str = "INFO", log_file: str | None = None) -> logging.Logger:
    """Configure and return the ``"figaroh_examples"`` logger.

    Existing handlers of that logger are replaced by a console handler (and a
    file handler when ``log_file`` is given) using the format
    ``"%(asctime)s - %(name)s - %(levelname)s - %(message)s"``.
    """
    example_logger = logging.getLogger("figaroh_examples")
    level = getattr(logging, str(log_level).upper(), None)
    if not isinstance(level, int):
        raise ValidationError(
            f"log_level must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got {log_level!r}"
        )
    example_logger.setLevel(level)
    for handler in list(example_logger.handlers):
        example_logger.removeHandler(handler)
        handler.close()
    fmt = logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler()]
    if log_file:
        handlers.append(logging.FileHandler(log_file))
    for handler in handlers:
        handler.setFormatter(fmt)
        example_logger.addHandler(handler)
    return example_logger


class ErrorContext:
    """Context manager logging start / success / failure of an operation.

    Args:
        operation_name: Human-readable name used in log messages.
        raise_on_error: When False the exception is swallowed (and kept in
            :attr:`error`); when True (default) it propagates.
    """

    def __init__(self, operation_name: str, raise_on_error: bool = True) -> None:
        self.operation_name = operation_name
        self.raise_on_error = raise_on_error
        self.error: BaseException | None = None

    def __repr__(self) -> str:
        return (
            f"ErrorContext(operation_name={self.operation_name!r}, "
            f"raise_on_error={self.raise_on_error}, error={self.error!r})"
        )

    def __enter__(self) -> ErrorContext:
        logger.info("Starting %s", self.operation_name)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc is None:
            logger.info("Completed %s", self.operation_name)
            return False
        self.error = exc
        logger.error("%s failed: %s", self.operation_name, exc)
        return not self.raise_on_error
