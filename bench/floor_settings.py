"""The demo site's settings with ``bench.floor_urls`` as its URLconf (for ``bench.floor``)."""

from project.settings import *  # noqa: F403

ROOT_URLCONF = "bench.floor_urls"
