"""Output for people and programs: rich views, the JSON contract, file writers, escaping."""
