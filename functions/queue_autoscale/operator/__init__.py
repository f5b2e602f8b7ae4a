"""The operator's view of a deployed stack: `status`, `explain --stack` and `report`."""
