"""Allow ``python -m sleap_infer``."""

from sleap_infer.cli import main

main()
