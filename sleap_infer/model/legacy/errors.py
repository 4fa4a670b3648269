"""The one error type of the legacy readers; the loader adds the folder to its message."""

from __future__ import annotations

from sleap_infer.core.errors import ModelError


class LegacyError(ModelError):
    """A SLEAP 1.x model we cannot run. The message names the feature, not the folder:
    :func:`sleap_infer.model.legacy.load.load_legacy` re-raises it with the folder."""


def unsupported(feature: str, hint: str = "") -> LegacyError:
    """``"<feature> is not supported[ (<hint>)]"``: the house wording for refusals."""
    return LegacyError(f"{feature} is not supported" + (f" ({hint})" if hint else ""))
