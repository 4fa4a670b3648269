"""Allow ``python -m sleap_infer``."""

from sleap_infer.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports this module
    main()
