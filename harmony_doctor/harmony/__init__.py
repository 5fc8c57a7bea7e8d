"""The Harmony format: the bundled vocabulary, openai-harmony as reference, spec, replay."""
