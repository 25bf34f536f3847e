"""History on disk: every metric of every GPU (by UUID) and the host, a day of seconds and a week of
minutes, in a few bytes per minute per metric. Core layer: numpy, zstandard and SQLite, no Qt."""
