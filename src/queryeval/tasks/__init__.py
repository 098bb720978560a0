"""Task kinds: how a case becomes requests, how outputs are scored and aggregated."""
