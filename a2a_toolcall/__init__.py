"""a2a-toolcall: serve A2A from Django and stream live tool-call-v1 timelines.

The package is layered (see docs/architecture.md): ``protocol`` and ``contract``
are pure Python (stdlib + pydantic) and never import Django; the Django glue
(``apps``, ``views``, ``models``, ``admin``, ``urls``) sits on top.
"""

__version__ = "0.1.0.dev0"
