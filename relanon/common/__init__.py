"""The bottom layer: errors, atomic outputs, progress, exact comparison, binning, word options, plain data, version.

Imports nothing above it: every other folder of relanon may use it.
"""
