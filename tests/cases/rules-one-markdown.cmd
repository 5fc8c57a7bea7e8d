rules HD185 --format markdown
