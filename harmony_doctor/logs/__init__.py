"""Log text -> the Harmony failures it records, once each."""
