"""Tests of harmony_doctor.scan: many sources -> events, request tallies, summary."""
