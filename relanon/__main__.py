"""``python -m relanon``: the command line."""

from relanon.cli import main

raise SystemExit(main())
