"""The evaluation matrix (``matrix``: agent modes side by side on the same tasks and seeds), its
statistics and its report."""
