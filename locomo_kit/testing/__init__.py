"""Test helpers shipped with the kit: :mod:`.system_contract`, the tests every memory-system adapter must pass."""

from locomo_kit.testing.system_contract import FailOnce, SystemContract, contract_conversations

__all__ = ["FailOnce", "SystemContract", "contract_conversations"]
