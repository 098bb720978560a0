"""The retrieval task — retrieval: recall@k, MRR and nDCG of retrieved chunks or documents.

The task class is in :mod:`.task`; the package holds everything the task alone uses."""
