"""StableHLO ops: elementwise, structured (data movement, contractions) and the core ones LiteRT registers. Importing
this package registers them.
"""

from . import (  # noqa: F401
    core,
    elementwise,
    structured,
)
