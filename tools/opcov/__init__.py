"""The op dashboard's code; ``tools/op_coverage.py`` is its command line. Importing the package imports nothing."""
