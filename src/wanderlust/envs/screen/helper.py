"""Entry point of the guard helper process (started by ``guard.GuardedDevice``).

``python -m wanderlust.envs.screen.helper SPEC_JSON PARENT_PID``; see ``guard.serve``.
"""

from __future__ import annotations

import sys

from wanderlust.envs.screen.guard import main

if __name__ == "__main__":
    main(sys.argv[1:])
