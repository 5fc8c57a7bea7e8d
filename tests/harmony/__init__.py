"""Tests of harmony_doctor.harmony."""
