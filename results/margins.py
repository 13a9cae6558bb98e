"""The analysis's margins, resolved once: delta, the collapse test's rope and the draw verdict's margin, in their units.

Why: a margin was once read from the options, defaulted and checked in several layers (the command line, the
analysis options, the data, the crossed analysis), each under its own name. Here one function,
:func:`resolve_margins`, builds the :class:`Margins` record from the options and the data, and one function,
:func:`check_margin`, validates a margin: its sign and its unit. The record is stored whole in summary.json
(``margins``), and every later layer reads its fields. The command line calls :func:`check_margin` before any
training or sampling, so a margin in the wrong unit is refused before any work; the analysis options call
:func:`positive` as they enter (docs/analysis.md).
"""

from __future__ import annotations

import math

from initmem.errors import OptionError
from initmem.results.records import FRACTION, METRIC_UNITS, Margins

DEFAULT_ACCURACY_DELTA = 0.01   # an accuracy's delta by default: one point, as a fraction of the test set
DRAW_MARGIN_POINTS = 0.5        # the draw verdict's default margin on SD_init for an accuracy, in points
RADIAL_MARGIN = 0.1  # the radial verdict's margin on the slope of log kernel norm on log sigma_w (1 at init): a
#                      16-fold sigma_w grid leaves final norms at most 16**0.1 = 1.32x apart when forgotten


def is_accuracy(metric: str) -> bool:
    """Whether a metric, by its name, is an accuracy analyzed as a fraction of the test set."""
    from initmem import cube  # numpy and xarray: only when a metric is checked

    return cube.points_scale(metric) != 1.0


def positive(value: float | None) -> float | None:
    """A margin's sign: a positive, finite number (None passes). Raises ValueError, which the options turn into
    one line naming the option."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a positive number (got {value!r})")
    return value


def check_margin(option: str, value: float | None, metric: str, *, accuracy: bool | None = None,
                 points: bool | None = None, points_syntax: bool = False) -> float | None:
    """Validate one margin for ``metric``: a positive number, in a unit the metric can have. Points (``2pt``) for a
    metric that is not an accuracy are refused, and so is a bare number of 1 or more for an accuracy (a fraction of
    the test set cannot reach it: it was meant in points).

    Parameters
    ----------
    option : str
        The option's name (``delta``, ``draw_margin``): the error names it, the command line as its flag.
    value : float or None
        The margin (None: not given, nothing to check).
    metric : str
        The metric it applies to.
    accuracy : bool, optional
        Whether the metric is an accuracy (None: decided from its name, :func:`is_accuracy`).
    points : bool, optional
        The value was given in accuracy points (None: read from the value's ``points`` attribute, which the
        command line's margins carry).
    points_syntax : bool
        The caller accepts points (the command line's ``2pt``): the message offers both spellings.

    Returns
    -------
    float or None
        The margin as a float.

    Raises
    ------
    OptionError
        A margin that is not positive, or not in a unit the metric can have.
    """
    if value is None:
        return None
    accuracy = is_accuracy(metric) if accuracy is None else accuracy
    points = bool(getattr(value, "points", False)) if points is None else points
    number = float(value)
    if not (math.isfinite(number) and number > 0):
        raise OptionError(option, f"{{option}} must be a positive number (got {number!r})")
    if points and not accuracy:
        raise OptionError(option, f"{100 * number:g}pt is in accuracy points, but metric {metric!r} is not an "
                          "accuracy: give it in the metric's own units")
    if accuracy and not points and number >= 1.0:
        if points_syntax:
            raise OptionError(option, f"{number:g} is ambiguous: metric {metric!r} is an accuracy, analyzed as a "
                              f"fraction of the test set; give {{option}} {number:g}pt for {number:g} points, or "
                              f"{{option}} {number / 100:g} as a fraction")
        raise OptionError(option, f"{{option}} {number:g} is not a fraction: metric {metric!r} is an accuracy "
                          "analyzed as a fraction of the test set, so give {option} as one (0.01 = 1 point)")
    return number


def resolve_margins(metric: str, *, delta: float | None, rope: float | None = None,
                    draw_margin: float | None = None, accuracy: bool | None = None) -> Margins:
    """The analysis's :class:`Margins` from its options and the data: the one place a margin is defaulted and
    validated (:func:`check_margin`).

    delta defaults to one point for an accuracy and must be given for any other metric (it has no natural unit);
    the rope defaults to delta; the draw margin to half a point for an accuracy, else none (no draw verdict).

    Parameters
    ----------
    metric : str
        The analysed metric.
    delta, rope, draw_margin : float or None
        The options (None: the default).
    accuracy : bool, optional
        Whether the metric is an accuracy as the data decided it (``MemoryData.is_accuracy``; None: from its name).

    Examples
    --------
    >>> resolve_margins("selected_test_acc", delta=None)
    Margins(delta=0.01, rope=0.01, draw_margin=0.005, unit='fraction')
    >>> resolve_margins("wall_seconds", delta=2.0).unit
    'metric units'
    """
    accuracy = is_accuracy(metric) if accuracy is None else accuracy
    if delta is None:
        if not accuracy:
            raise OptionError("delta", f"metric {metric!r} is not an accuracy: give {{option}} in its units (the "
                              "smallest spread over sigma_w that would matter)")
        delta = DEFAULT_ACCURACY_DELTA
    resolved = check_margin("delta", delta, metric, accuracy=accuracy, points=False)
    assert resolved is not None
    margin = check_margin("draw_margin", draw_margin, metric, accuracy=accuracy, points=False)
    if margin is None and accuracy:
        margin = DRAW_MARGIN_POINTS / 100.0
    positive(rope)
    return Margins(delta=resolved, rope=resolved if rope is None else float(rope), draw_margin=margin,
                   unit=FRACTION if accuracy else METRIC_UNITS)


__all__ = ["DEFAULT_ACCURACY_DELTA", "DRAW_MARGIN_POINTS", "RADIAL_MARGIN", "Margins", "check_margin", "is_accuracy",
           "positive", "resolve_margins"]
