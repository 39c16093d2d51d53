"""A rank's data: datasets by name, their files, the node's prepared copies and the batches on the device."""
