"""``python -m a2a_toolcall URL "message"``: the terminal client.

See :mod:`a2a_toolcall.client.terminal`.
"""

from a2a_toolcall.client.terminal import main

raise SystemExit(main())
