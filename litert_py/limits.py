"""Resource limits shared by the runtime and the kernels (below both, so either can import them).

``MAX_ARENA_BYTES``: bytes one subgraph's arena (and one kernel's prepare-time scratch buffer) may take, so that a
hostile model's shapes cannot exhaust the machine; the environment variable ``LITERT_PY_MAX_ARENA_BYTES`` sets it
(default 4 GiB)."""

from __future__ import annotations

import os

MAX_ARENA_BYTES = int(os.environ.get("LITERT_PY_MAX_ARENA_BYTES", 4 << 30))
