"""Log text -> the Harmony failures it records, once each."""

from harmony_doctor.logs.extract import extract_errors, extract_text
from harmony_doctor.logs.servers import version_label

__all__ = ["extract_errors", "extract_text", "version_label"]
