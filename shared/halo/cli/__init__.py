"""The `halo` command line."""
