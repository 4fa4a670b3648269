"""Help pages that read in full at 80 columns, and the exit codes every command documents.

Typer's rich help panels squeeze long option names into a fixed column and cut
them with an ellipsis at 80 columns; plain help (``rich_markup_mode=None``) wraps
instead. :class:`HelpCommand` fixes what plain help still gets wrong for us:
Typer writes a required argument as ``{videos}...`` and lists it with a Python
type (``<list[str]>``), and textwrap splits ``--peak-threshold`` after ``peak-``.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from typer.core import TyperCommand

EXIT_OK = 0
EXIT_FAILED = 1  # a video, the model or a benchmark row failed
EXIT_USAGE = 2  # bad usage or options (what SleapInferError.UsageError carries)
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM, as shells report SIGINT

_BRACED = re.compile(r"^\{([^}]*)\}")


def exit_codes(ok: str, failed: str, interrupted: str = "interrupted (Ctrl-C or SIGTERM)") -> str:
    r"""The epilog block each command ends its help with (``\b``: kept as written)."""
    return (
        "\b\nExit codes:\n"
        f"  0    {ok}\n"
        f"  1    {failed}\n"
        "  2    bad usage or options\n"
        f"  130  {interrupted}"
    )


@contextmanager
def whole_hyphenated_words() -> Iterator[None]:
    """Wrap help text at spaces only, so option names in it stay copyable."""
    wrapper = textwrap.TextWrapper
    saved = wrapper.wordsep_re
    wrapper.wordsep_re = wrapper.wordsep_simple_re  # type: ignore[misc]
    try:
        yield
    finally:
        wrapper.wordsep_re = saved  # type: ignore[misc]


class HelpCommand(TyperCommand):
    """A command whose plain help shows ``VIDEOS...`` and arguments without Python types."""

    def invoke(self, ctx: Any) -> Any:
        """Run the command; Ctrl-C becomes :class:`~sleap_infer.core.errors.Interrupted`.

        Typer turns a ``KeyboardInterrupt`` into a silent exit code 130, so the command
        line's one-line report never ran; an error of ours passes through to it instead.
        """
        from sleap_infer.core.errors import Interrupted

        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            raise Interrupted("interrupted") from None

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Parse, then refuse NaN, Inf and out-of-range numbers before the command runs
        (exit 2): a threshold of ``nan`` must not fail only after predicting."""
        from sleap_infer.core.options import check_number

        rest = super().parse_args(ctx, args)
        for param in self.get_params(ctx):
            value = ctx.params.get(param.name)
            flag = max(getattr(param, "opts", None) or [param.name], key=len)
            for item in value if isinstance(value, (list, tuple)) else [value]:
                check_number(param.name, item, flag)
        return rest

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return [_BRACED.sub(r"\1", piece) for piece in super().collect_usage_pieces(ctx)]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with whole_hyphenated_words():
            super().format_help(ctx, formatter)

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                arguments.append((_argument_name(param), param.help or ""))
            elif (record := param.get_help_record(ctx)) is not None:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _argument_name(param: Any) -> str:
    name = param.metavar or param.name.upper()
    return name if param.nargs == 1 or name.endswith("...") else f"{name}..."
