"""Host scripts run inside a third-party system's own environment (stdlib + that system only; never imported by the kit)."""
