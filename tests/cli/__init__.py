"""Tests of harmony_doctor.cli."""
