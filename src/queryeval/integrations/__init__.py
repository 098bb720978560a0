"""Where our users already are: OpenTelemetry (:mod:`.otel`), MLflow (:mod:`.mlflow`), an
inspect_ai scorer (:mod:`.inspect`) and a promptfoo Python assertion (:mod:`.promptfoo`).

Layer ``integrations``: above ``api`` (it reads runs through the run model and scores
through the tasks), below ``cli``. Each module imports its third-party package when called,
so ``import queryeval`` never needs them (extras ``otel``, ``mlflow``, ``inspect``).
See docs/ci.md.
"""
