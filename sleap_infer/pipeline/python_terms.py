"""Errors said in Python's words at the API's edge: ``overwrite=True``, not ``--overwrite``.

The checks that refuse bad input are shared by the command line and the Python
API (one rule, one place), and their lines name the command line's flags. A
Python caller reading ``exists (--overwrite replaces it)`` has no flag to pass,
so the public calls (:func:`sleap_infer.load`, ``Pipeline.predict`` ...) rewrite
the flags of an error that leaves them into keyword arguments. Only for callers
outside the package: the batch executor calls ``predict_to_file`` for ``infer
predict``, whose outcome lines must keep naming flags.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from sleap_infer.core.errors import SleapInferError

F = TypeVar("F", bound=Callable[..., Any])

# Flags that take no value: in Python they are ``name=True``.
SWITCHES = frozenset(
    {
        "overwrite",
        "resume",
        "recursive",
        "tracking",
        "merge_into_project",
        "no_refine",
        "refine_like_sleap_nn",
        "centroid_only",
        "fp16",
        "no_empty_frames",
        "keep_corrupt_frames",
        "only_labeled_frames",
        "only_suggested_frames",
        "only_predicted_frames",
        "exclude_user_labeled",
        "filter_overlapping",
        "link_tracklets",
        "use_flow",
        "use_kalman",
        "post_connect_single_breaks",
        "tracking_pre_cull_to_target",
    }
)
_FORMAT = re.compile(r"(?<![\w-])--format ([a-z][a-z0-9_-]*)\b")
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:-[a-z0-9]+)*)")


def python_words(message: str) -> str:
    """``message`` with command-line flags as keyword arguments."""
    message = message.replace("-o/--output", "output").replace("--tracking (-t)", "--tracking")
    message = _FORMAT.sub(r"format='\1'", message)

    def keyword(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        return f"{name}=True" if name in SWITCHES else name

    return _FLAG.sub(keyword, message)


def _reword(exc: SleapInferError, depth: int) -> None:
    """Rewrite ``exc``'s line unless the frame ``depth`` up is the package's own code."""
    caller = sys._getframe(depth).f_globals.get("__name__", "")
    outside = caller == "sleap_infer" or not caller.startswith("sleap_infer.")
    if outside and exc.args and isinstance(exc.args[0], str):
        exc.args = (python_words(exc.args[0]), *exc.args[1:])


def in_python_words(fn: F) -> F:
    """``fn``, its :class:`SleapInferError` lines reworded for a caller outside the package."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SleapInferError as exc:
            _reword(exc, 2)
            raise

    return wrapper  # type: ignore[return-value]


def reworded(items: Iterator[Any]) -> Iterator[Any]:
    """A generator's errors reworded (for ``Pipeline.stream``: they surface while iterating)."""
    try:
        yield from items
    except SleapInferError as exc:
        if exc.args and isinstance(exc.args[0], str):
            exc.args = (python_words(exc.args[0]), *exc.args[1:])
        raise
