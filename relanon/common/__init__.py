"""The bottom layer: errors, atomic outputs, progress, exact comparison. Imports nothing above it."""
