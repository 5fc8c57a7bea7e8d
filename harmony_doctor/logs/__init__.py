"""Log text -> the Harmony failures it records, once each."""

from harmony_doctor.logs.extract import extract_errors, extract_text
from harmony_doctor.logs.servers import version_label
from harmony_doctor.logs.stripped import find_stripped

__all__ = ["extract_errors", "extract_text", "find_stripped", "version_label"]
