"""Test helpers shipped with the kit: :mod:`.system_contract`, the tests every memory-system adapter must pass."""
