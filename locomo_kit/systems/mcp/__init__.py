"""MCP memory servers as memory systems: ``--system mcp:NAME`` (a shipped profile) or ``mcp:path/to/profile.toml``
(docs/mcp.md). The kit's process imports only the profile machinery; the MCP SDK runs in a host process."""

from locomo_kit.systems.mcp.profiles import PREFIX, Profile, ProfileError, load_profile, shipped_names

__all__ = ["PREFIX", "Profile", "ProfileError", "load_profile", "shipped_names"]
