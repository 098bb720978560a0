"""Small file helpers shared by readers and the run log: JSONL with line numbers, atomic writes."""
