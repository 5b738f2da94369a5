"""books."""
