"""What template.yaml does not hold: template loading, the emulator bootstrap, lint helpers."""
