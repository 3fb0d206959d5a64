"""``python -m hms_proxy.cli``: the same as the ``hms-proxy`` command."""
import sys

from hms_proxy.cli import main

sys.exit(main())
