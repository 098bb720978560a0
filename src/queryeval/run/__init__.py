"""Running an evaluation: concurrency, retries, timeouts, resume, and the run log."""
