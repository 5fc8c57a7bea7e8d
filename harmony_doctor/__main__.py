"""`python -m harmony_doctor` runs the CLI."""

from harmony_doctor.cli.start import main

main()
