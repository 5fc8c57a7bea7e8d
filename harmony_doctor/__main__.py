"""`python -m harmony_doctor` runs the CLI."""

from harmony_doctor.cli.app import main

main()
