"""watch: following running servers' logs, counting Harmony failures live for Prometheus."""
