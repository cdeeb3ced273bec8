"""Private helpers (skipped by tool discovery because the name starts with an underscore)."""
