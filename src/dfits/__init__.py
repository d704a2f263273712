"""dfits."""
