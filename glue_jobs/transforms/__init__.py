"""Pure DataFrame transforms: DataFrames and plain parameters in, DataFrames out (no Glue)."""
