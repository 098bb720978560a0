"""The engines that score: what a task calls to turn an output into a number.

* :mod:`~queryeval.engines.query` runs gold and predicted SPARQL/SQL in sandboxed workers
  (deadline, memory cap, no files, no network) and builds the test-suite neighbours;
* :mod:`~queryeval.engines.judge` is the LLM judge, :mod:`~queryeval.engines.chat` the
  OpenAI-compatible chat client it (and the reformat step) uses;
* :mod:`~queryeval.engines.retrievers` are the BM25, dense and ANN retrievers.

They sit below the system-under-test adapters (:mod:`queryeval.systems`) and the tasks, and
import neither (docs/architecture.md, tests/project/test_architecture.py)."""
